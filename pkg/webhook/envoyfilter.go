package webhook

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the JSON decoder Istio's validation uses, for its words
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/runtime/protoiface"
	"google.golang.org/protobuf/runtime/protoimpl"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
)

// efAsWritten is what istiod does with an EnvoyFilter patch the webhook rejects.
const efAsWritten = "istiod does not check it when it reads the object; it applies each patch it can decode when it builds the proxy's configuration and skips (and logs) the ones it cannot"

// maxProxyVersionLen is envoyfilter.go's bound on a proxyVersion match.
const maxProxyVersionLen = 1024

// EnvoyFilter returns what ValidateEnvoyFilter (istio/istio
// pkg/config/validation/envoyfilter/envoyfilter.go) rejects, after the metadata checks: the
// workload selector, then each config patch (applyTo, patch, operation and value present, the
// proxyVersion regular expression, the match of the object kind applyTo names), and the patch
// value decoded into the Envoy type applyTo names (xds.BuildXDSObjectFromStruct), as Istio
// decodes it. Istio resolves the type of an embedded Any among the message types its binary
// registers (every Envoy extension); the plugin registers fewer, so an Any of a type Istio knows
// and the plugin does not is accepted without looking inside it (istio_message_types.txt lists
// Istio's types; the conformance module keeps the list equal to them). A BOOTSTRAP patch's value
// is not decoded (the plugin does not link Envoy's bootstrap types). Warnings are not reported;
// patches for the WAYPOINT context are not checked, as in Istio.
func EnvoyFilter(m Meta, spec *networking.EnvoyFilter) []Problem {
	if ps := metadataAndSelector(m, spec.GetWorkloadSelector()); ps != nil {
		return ps
	}
	var l list
	for i, cp := range spec.GetConfigPatches() {
		at := fmt.Sprintf("spec.configPatches[%d]", i)
		if cp == nil {
			l.add(at, "Envoy filter: null config patch", efAsWritten)
			continue
		}
		if cp.GetMatch().GetContext() == networking.EnvoyFilter_WAYPOINT {
			continue
		}
		switch {
		case cp.ApplyTo == networking.EnvoyFilter_INVALID:
			l.add(at+".applyTo", "Envoy filter: missing applyTo", efAsWritten)
			continue
		case cp.Patch == nil:
			l.add(at+".patch", "Envoy filter: missing patch", efAsWritten)
			continue
		case cp.Patch.Operation == networking.EnvoyFilter_Patch_INVALID:
			l.add(at+".patch.operation", "Envoy filter: missing patch operation", efAsWritten)
			continue
		case cp.Patch.Operation != networking.EnvoyFilter_Patch_REMOVE && cp.Patch.Value == nil:
			l.add(at+".patch.value", "Envoy filter: missing patch value for non-remove operation", efAsWritten)
			continue
		}
		if v := cp.GetMatch().GetProxy().GetProxyVersion(); v != "" && len(v) <= maxProxyVersionLen {
			if _, err := regexp.Compile(v); err != nil {
				l.add(at+".match.proxy.proxyVersion", fmt.Sprintf("Envoy filter: invalid regex for proxy version, [%v]", err), efAsWritten)
				continue
			}
		}
		if !l.patchMatch(at, cp) {
			continue
		}
		if msg := decodePatchValue(cp.ApplyTo, cp.Patch.Value); msg != "" {
			l.add(at+".patch.value", msg, efAsWritten)
		}
	}
	return l
}

// patchMatch checks that a patch's match fits the object kind it applies to; false ends the
// patch's checks, as Istio's `continue` does.
func (l *list) patchMatch(at string, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch) bool {
	m := cp.GetMatch()
	if m == nil || m.ObjectTypes == nil {
		return true
	}
	switch cp.ApplyTo {
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_FILTER_CHAIN, networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_HTTP_FILTER:
		lm := m.GetListener()
		if lm == nil {
			l.add(at+".match", "Envoy filter: applyTo for listener class objects cannot have non listener match", efAsWritten)
			return false
		}
		f := lm.GetFilterChain().GetFilter()
		if f == nil {
			return true
		}
		fat := at + ".match.listener.filterChain.filter"
		switch {
		case f.Name == "":
			l.add(fat+".name", "Envoy filter: filter match has no name to match on", efAsWritten)
			return false
		case f.SubFilter == nil:
		case cp.ApplyTo != networking.EnvoyFilter_HTTP_FILTER:
			l.add(fat+".subFilter", "Envoy filter: subfilter match can be used with applyTo HTTP_FILTER only", efAsWritten)
			return false
		case f.Name != "envoy.filters.network.http_connection_manager" && f.Name != "envoy.http_connection_manager":
			l.add(fat+".subFilter", "Envoy filter: subfilter match requires filter match with envoy.filters.network.http_connection_manager", efAsWritten)
			return false
		case f.SubFilter.Name == "":
			l.add(fat+".subFilter.name", "Envoy filter: subfilter match has no name to match on", efAsWritten)
			return false
		}
	case networking.EnvoyFilter_ROUTE_CONFIGURATION, networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_HTTP_ROUTE:
		if m.GetRouteConfiguration() == nil {
			l.add(at+".match", "Envoy filter: applyTo for http route class objects cannot have non route configuration match", efAsWritten)
		}
	case networking.EnvoyFilter_CLUSTER:
		if m.GetCluster() == nil {
			l.add(at+".match", "Envoy filter: applyTo for cluster class objects cannot have non cluster match", efAsWritten)
		}
	}
	return true
}

// patchObject is xds.BuildXDSObjectFromStruct's Envoy type for applyTo; nil for the kinds the
// plugin does not decode (BOOTSTRAP), and for an applyTo Istio does not know.
func patchObject(applyTo networking.EnvoyFilter_ApplyTo) (proto.Message, bool) {
	switch applyTo {
	case networking.EnvoyFilter_CLUSTER:
		return &cluster.Cluster{}, true
	case networking.EnvoyFilter_LISTENER:
		return &listener.Listener{}, true
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		return &route.RouteConfiguration{}, true
	case networking.EnvoyFilter_FILTER_CHAIN:
		return &listener.FilterChain{}, true
	case networking.EnvoyFilter_HTTP_FILTER:
		return &hcm.HttpFilter{}, true
	case networking.EnvoyFilter_NETWORK_FILTER:
		return &listener.Filter{}, true
	case networking.EnvoyFilter_VIRTUAL_HOST:
		return &route.VirtualHost{}, true
	case networking.EnvoyFilter_HTTP_ROUTE:
		return &route.Route{}, true
	case networking.EnvoyFilter_EXTENSION_CONFIG:
		return &core.TypedExtensionConfig{}, true
	case networking.EnvoyFilter_LISTENER_FILTER:
		return &listener.ListenerFilter{}, true
	case networking.EnvoyFilter_BOOTSTRAP:
		return nil, true
	}
	return nil, false
}

// decodePatchValue is BuildXDSObjectFromStruct (not strict) with validateEnvoyFilter's wording
// of its error; "" when the value decodes, or is of a kind the plugin does not decode.
func decodePatchValue(applyTo networking.EnvoyFilter_ApplyTo, value *structpb.Struct) string {
	obj, known := patchObject(applyTo)
	if !known {
		return fmt.Sprintf("Envoy filter: unknown object type for applyTo %s", applyTo)
	}
	if obj == nil || value == nil {
		return ""
	}
	var buf bytes.Buffer
	if err := (&jsonpb.Marshaler{OrigName: true}).Marshal(&buf, protoimpl.X.ProtoMessageV1Of(value)); err != nil {
		return "Envoy filter: " + err.Error()
	}
	u := jsonpb.Unmarshaler{AllowUnknownFields: true, AnyResolver: istioTypes{}}
	err := u.Unmarshal(&buf, protoimpl.X.ProtoMessageV1Of(obj))
	if err == nil {
		return ""
	}
	msg := "Envoy filter: " + err.Error()
	if strings.Contains(msg, "could not resolve Any message type") {
		if strings.Contains(msg, ".v2.") {
			return fmt.Sprintf("referenced type unknown (hint: try using the v3 XDS API): %v", msg)
		}
		return fmt.Sprintf("referenced type unknown: %v", msg)
	}
	return msg
}

//go:embed istio_message_types.txt
var istioMessageTypeList string

// istioMessageTypes are the full names of the message types Istio's validation can resolve in
// an Any (istio_message_types.txt), sorted.
var istioMessageTypes = strings.Fields(istioMessageTypeList)

// istioTypes resolves an Any's type as Istio's validation would: a type the plugin registers
// is decoded as Istio decodes it; one Istio registers and the plugin does not is accepted
// without looking inside (an opaque message, whose fields are all unknown and dropped); any
// other fails with jsonpb's own words.
type istioTypes struct{}

func (istioTypes) Resolve(typeURL string) (protoiface.MessageV1, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL); err == nil {
		return protoimpl.X.ProtoMessageV1Of(mt.New().Interface()), nil
	}
	name := typeURL
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if _, ok := slices.BinarySearch(istioMessageTypes, name); ok {
		return protoimpl.X.ProtoMessageV1Of(dynamicpb.NewMessage(opaque)), nil
	}
	return nil, fmt.Errorf("could not resolve Any message type: %v", typeURL)
}

// opaque is a message type without fields.
var opaque = func() protoreflect.MessageDescriptor {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("meshexplain/opaque.proto"),
		Package:     proto.String("meshexplain"),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Opaque")}},
	}, nil)
	if err != nil {
		panic(err)
	}
	return fd.Messages().Get(0)
}()
