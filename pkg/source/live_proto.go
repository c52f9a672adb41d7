package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// The built-in kinds are listed in protobuf, as their typed clients list them (same path,
// query and Accept header), but read as the body streams in: one item at a time through a
// small buffer instead of the whole body (client-go reads it with io.ReadAll, then copies the
// list out of its envelope), and without decoding metadata.managedFields, which the loader
// drops anyway and which is about half of a Pod, nor the fields of a Pod that nothing reads
// (newPodItem).

// acceptProtobuf is the Accept header of the typed clients of the built-in kinds.
const acceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"

// protobufMagic starts every protobuf-encoded object the API server sends (the envelope is a
// runtime.Unknown: k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// The fields read: runtime.Unknown raw (2); a list's metadata (1) and items (2); an object's
// metadata (1), spec (2) and status (3); ObjectMeta managedFields (17).
const (
	unknownRawField    = 2
	listMetaField      = 1
	listItemsField     = 2
	objectMetaField    = 1
	objectSpecField    = 2
	objectStatusField  = 3
	managedFieldsField = 17
)

// protoItem is a new, empty item of a list and its ObjectMeta.
type protoItem struct {
	o    object
	all  interface{ Unmarshal([]byte) error }
	meta *metav1.ObjectMeta
	// spec and status, when set, decode the item's spec (field 2) and status (field 3) in place
	// of all: a Pod's, without the fields nothing reads (newPodItem).
	spec, status func([]byte) error
}

// coreREST is the REST client of the core group, or nil (a fake clientset has none).
func (c *clients) coreREST() rest.Interface {
	rc := c.kube.CoreV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); ok && r == nil {
		return nil
	}
	return rc
}

// newProtoItem is a new, empty item of type T.
func newProtoItem[T any, PT interface {
	*T
	object
	Unmarshal([]byte) error
	GetObjectMeta() metav1.Object
}]() protoItem {
	p := PT(new(T))
	return protoItem{o: p, all: p, meta: p.GetObjectMeta().(*metav1.ObjectMeta)}
}

// listProtoPage reads one page of a built-in kind (its plural resource) through rc. A server that answers in JSON is
// decoded by the client's own deserializer into list (a new, empty list of the kind).
func listProtoPage(ctx context.Context, rc rest.Interface, resource, ns string, opts metav1.ListOptions,
	newItem func() protoItem, list runtime.Object, fromList func(runtime.Object) ([]object, string)) ([]object, string, error) {
	body, err := rc.Get().
		Namespace(ns).
		Resource(resource).
		VersionedParams(&opts, scheme.ParameterCodec).
		SetHeader("Accept", acceptProtobuf).
		Stream(ctx)
	if err != nil {
		return nil, "", err
	}
	defer body.Close()
	br := bufio.NewReaderSize(body, 32<<10)
	if head, err := br.Peek(len(protobufMagic)); err != nil || !bytes.Equal(head, protobufMagic) {
		data, err := io.ReadAll(br)
		if err != nil {
			return nil, "", fmt.Errorf("reading the list of %s: %w", resource, err)
		}
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, list); err != nil {
			return nil, "", fmt.Errorf("decoding the list of %s: %w", resource, err)
		}
		items, cont := fromList(list)
		return items, cont, nil
	}
	if _, err := br.Discard(len(protobufMagic)); err != nil {
		return nil, "", err
	}
	items, cont, err := readProtoList(br, newItem)
	if err != nil {
		return nil, "", fmt.Errorf("decoding the list of %s: %w", resource, err)
	}
	return items, cont, nil
}

// readProtoList reads a runtime.Unknown whose raw bytes are a list, item by item, and returns
// the items (managedFields left out) and the list's continue token.
func readProtoList(br *bufio.Reader, newItem func() protoItem) ([]object, string, error) {
	var items []object
	cont := ""
	var buf []byte
	seenRaw := false
	for {
		num, typ, err := readTag(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
		if num != unknownRawField || typ != protowire.BytesType {
			if buf, err = readField(br, typ, buf); err != nil {
				return nil, "", err
			}
			continue
		}
		n, err := binaryUvarint(br)
		if err != nil {
			return nil, "", err
		}
		// The envelope's raw bytes are a singular field: if it comes twice, the last one is
		// the list, as for protobuf's own decoder.
		seenRaw, items, cont = true, items[:0], ""
		lr := &countingReader{r: br, left: int64(n)}
		for lr.left > 0 {
			num, typ, err := readTag(lr)
			if err != nil {
				return nil, "", unexpected(err)
			}
			if typ != protowire.BytesType || (num != listMetaField && num != listItemsField) {
				if buf, err = readField(lr, typ, buf); err != nil {
					return nil, "", unexpected(err)
				}
				continue
			}
			if buf, err = readBytes(lr, buf); err != nil {
				return nil, "", unexpected(err)
			}
			if num == listMetaField {
				var lm metav1.ListMeta
				if err := lm.Unmarshal(buf); err != nil {
					return nil, "", err
				}
				cont = lm.Continue
				continue
			}
			it := newItem()
			if err := unmarshalItem(buf, it); err != nil {
				return nil, "", err
			}
			items = append(items, it.o)
		}
	}
	if !seenRaw {
		return nil, "", errors.New("no list in the response")
	}
	return items, cont, nil
}

// unmarshalItem decodes the bytes of one item into it: its metadata without managedFields, its
// spec and status through it.spec and it.status when set, the rest with the item's own
// Unmarshal, which (generated by gogo-protobuf) merges what it reads into what is there, field
// after field, as it would from the whole message.
func unmarshalItem(b []byte, it protoItem) error {
	return unmarshalRuns(b, func(num protowire.Number, field []byte) (bool, error) {
		var decode func([]byte) error
		switch num {
		case objectMetaField:
			decode = func(meta []byte) error {
				return unmarshalRuns(meta, skipManagedFields, it.meta.Unmarshal)
			}
		case objectSpecField:
			decode = it.spec
		case objectStatusField:
			decode = it.status
		}
		v, ok := fieldBytes(field)
		if decode == nil || !ok {
			return false, nil
		}
		return true, decode(v)
	}, it.all.Unmarshal)
}

// fieldBytes returns the value of a length-delimited field, given whole (tag included); ok is
// false for a field of another wire type, which the message's own Unmarshal reports.
func fieldBytes(field []byte) (v []byte, ok bool) {
	_, typ, n := protowire.ConsumeTag(field)
	if n < 0 || typ != protowire.BytesType {
		return nil, false
	}
	v, m := protowire.ConsumeBytes(field[n:])
	return v, m >= 0
}

// dropFields is the skip of unmarshalRuns that leaves out the fields nums.
func dropFields(nums ...protowire.Number) func(protowire.Number, []byte) (bool, error) {
	return func(num protowire.Number, _ []byte) (bool, error) { return slices.Contains(nums, num), nil }
}

// The fields of a Pod that nothing reads, left out as a live list streams in, and cleared by
// SlimPod from a Pod read from a cluster another way (a get, a JSON answer): what its
// containers run, mount and probe, their resources and environment, the pod's volumes and
// scheduling constraints, its conditions and container statuses. They are most of a real Pod.
// What is read of a Pod: its metadata; nodeName, hostNetwork, the service account, and the
// name, ports and restartPolicy of its containers and init containers, and the args of the
// istio-proxy container (the proxy's type, model.ProxyType); its phase and IPs
// (TestSlimPodsExplainTheSame, pkg/cli, explains every scenario with slimmed Pods). Field
// numbers are those of k8s.io/api/core/v1 generated.proto.
var (
	// PodSpec volumes, securityContext, affinity, tolerations, topologySpreadConstraints,
	// ephemeralContainers.
	podSpecDropped = []protowire.Number{1, 14, 18, 22, 33, 34}
	// Container command, args, env, resources, volumeMounts, livenessProbe, readinessProbe,
	// lifecycle, securityContext, envFrom, volumeDevices, startupProbe, resizePolicy.
	containerDropped = []protowire.Number{3, 4, 7, 8, 9, 10, 11, 12, 15, 19, 21, 22, 23}
	// PodStatus conditions, containerStatuses, initContainerStatuses,
	// ephemeralContainerStatuses, resourceClaimStatuses.
	podStatusDropped = []protowire.Number{2, 8, 10, 13, 15}
)

// The skips of unmarshalRuns for the fields above, made once rather than per item.
var (
	skipManagedFields    = dropFields(managedFieldsField)
	skipPodStatusDropped = dropFields(podStatusDropped...)
)

// PodSpec containers (2) and initContainers (20).
const (
	podSpecContainersField     = 2
	podSpecInitContainersField = 20
)

// newPodItem is a new, empty Pod whose spec and status are decoded without the fields
// podSpecDropped, containerDropped and podStatusDropped list.
func newPodItem() protoItem {
	p := &corev1.Pod{}
	return protoItem{
		o: p, all: p, meta: &p.ObjectMeta,
		spec: func(b []byte) error { return unmarshalPodSpec(b, &p.Spec) },
		status: func(b []byte) error {
			return unmarshalRuns(b, skipPodStatusDropped, p.Status.Unmarshal)
		},
	}
}

// unmarshalPodSpec decodes b into spec without the fields podSpecDropped lists, and its
// containers and init containers without those containerDropped lists, in their order.
func unmarshalPodSpec(b []byte, spec *corev1.PodSpec) error {
	return unmarshalRuns(b, func(num protowire.Number, field []byte) (bool, error) {
		var list *[]corev1.Container
		switch {
		case num == podSpecContainersField:
			list = &spec.Containers
		case num == podSpecInitContainersField:
			list = &spec.InitContainers
		default:
			return slices.Contains(podSpecDropped, num), nil
		}
		v, ok := fieldBytes(field)
		if !ok {
			return false, nil
		}
		*list = append(*list, corev1.Container{})
		c := &(*list)[len(*list)-1]
		return true, unmarshalRuns(v, skipContainerFields(), c.Unmarshal)
	}, spec.Unmarshal)
}

// Container name (1) and args (4).
const (
	containerNameField = 1
	containerArgsField = 4
)

// skipContainerFields is the skip of one container's fields: those containerDropped lists,
// but the args of the proxy container (model.ProxyContainer), which name the type of its proxy
// (model.ProxyType). The API server encodes a container's name before its args.
func skipContainerFields() func(protowire.Number, []byte) (bool, error) {
	proxy := false
	return func(num protowire.Number, field []byte) (bool, error) {
		switch num {
		case containerNameField:
			v, ok := fieldBytes(field)
			proxy = ok && string(v) == model.ProxyContainer
			return false, nil
		case containerArgsField:
			return !proxy, nil
		}
		return slices.Contains(containerDropped, num), nil
	}
}

// SlimPod clears the fields of p that nothing reads and that a live list leaves out
// (podSpecDropped, containerDropped, podStatusDropped), so that a Pod read from a cluster is the
// same however it was read. Pods read from files are kept whole.
func SlimPod(p *corev1.Pod) {
	s := &p.Spec
	s.Volumes, s.SecurityContext, s.Affinity = nil, nil, nil
	s.Tolerations, s.TopologySpreadConstraints, s.EphemeralContainers = nil, nil, nil
	for _, cs := range [][]corev1.Container{s.Containers, s.InitContainers} {
		for i := range cs {
			c := &cs[i]
			c.Command, c.Env, c.EnvFrom, c.Resources = nil, nil, nil, corev1.ResourceRequirements{}
			if c.Name != model.ProxyContainer {
				c.Args = nil
			}
			c.VolumeMounts, c.VolumeDevices, c.ResizePolicy = nil, nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle, c.SecurityContext = nil, nil, nil, nil, nil
		}
	}
	st := &p.Status
	st.Conditions, st.ContainerStatuses, st.InitContainerStatuses = nil, nil, nil
	st.EphemeralContainerStatuses, st.ResourceClaimStatuses = nil, nil
}

// unmarshalRuns calls unmarshal with every run of consecutive fields of message b that skip
// does not take (skip is given each field whole, tag included, and may decode it itself).
func unmarshalRuns(b []byte, skip func(num protowire.Number, field []byte) (bool, error), unmarshal func([]byte) error) error {
	start := 0
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[i+n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		end := i + n + m
		skipped, err := skip(num, b[i:end])
		if err != nil {
			return err
		}
		if skipped {
			if i > start {
				if err := unmarshal(b[start:i]); err != nil {
					return err
				}
			}
			start = end
		}
		i = end
	}
	if start < len(b) {
		return unmarshal(b[start:])
	}
	return nil
}

// countingReader reads at most left bytes of r.
type countingReader struct {
	r    *bufio.Reader
	left int64
}

func (c *countingReader) ReadByte() (byte, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	b, err := c.r.ReadByte()
	if err == nil {
		c.left--
	}
	return b, err
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

type byteReader interface {
	io.Reader
	io.ByteReader
}

func binaryUvarint(r io.ByteReader) (uint64, error) {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := r.ReadByte()
		if err != nil {
			if shift > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("proto: varint overflows 64 bits")
}

func readTag(r byteReader) (protowire.Number, protowire.Type, error) {
	v, err := binaryUvarint(r)
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(v)
	if num < protowire.MinValidNumber {
		return 0, 0, errors.New("proto: invalid field number")
	}
	return num, typ, nil
}

// readBytes reads a length-delimited value into buf (reused) and returns it.
func readBytes(r byteReader, buf []byte) ([]byte, error) {
	n, err := binaryUvarint(r)
	if err != nil {
		return buf, unexpected(err)
	}
	if n > 1<<30 {
		return buf, errors.New("proto: a field longer than 1 GiB")
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(r, buf)
	return buf, unexpected(err)
}

// readField reads and drops a field's value of wire type typ.
func readField(r byteReader, typ protowire.Type, buf []byte) ([]byte, error) {
	var err error
	switch typ {
	case protowire.VarintType:
		_, err = binaryUvarint(r)
	case protowire.Fixed32Type:
		_, err = io.ReadFull(r, make([]byte, 4))
	case protowire.Fixed64Type:
		_, err = io.ReadFull(r, make([]byte, 8))
	case protowire.BytesType:
		buf, err = readBytes(r, buf)
	default:
		err = fmt.Errorf("proto: wire type %d is not read", typ)
	}
	return buf, unexpected(err)
}

// unexpected turns an end of input inside a message into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
