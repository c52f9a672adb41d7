package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"

	// Every type istiod puts into a Cluster as an Any must be registered, or protojson cannot
	// print it: typed_extension_protocol_options, transport sockets (TLS, plaintext, PROXY
	// protocol, internal upstream for HBONE and metadata exchange), the c-ares DNS resolver,
	// the load-balancing policies, and the TypedStruct filter configs.
	_ "github.com/cncf/xds/go/udpa/type/v1"
	_ "github.com/cncf/xds/go/xds/type/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/tcp/v3"
)

// envoyPrinter prints the generated objects themselves (res.Objects[i].Message) as a JSON
// array in protojson's default form, sorted by name, except filter chains, which keep the
// listener's order (istiod's, which decides which chain Envoy picks); a result with filter
// chains prints only its chains, its other objects being their filters. protojson deliberately varies its
// whitespace between runs, so each object is compacted and re-indented: the bytes depend only
// on the content, and the output can be compared with istiod's CDS.
type envoyPrinter struct{}

func (envoyPrinter) Print(w io.Writer, r *explain.Result) error {
	return envoyPrinter{}.PrintList(w, []*explain.Result{r})
}

// named is one printed object.
type named struct {
	name string
	json []byte
}

func (envoyPrinter) PrintList(w io.Writer, rs []*explain.Result) error {
	var objs []named
	ordered := false
	for _, r := range rs {
		if r == nil {
			continue
		}
		chains := slices.ContainsFunc(r.Objects, func(o explain.Object) bool { return o.Kind == kindFilterChain })
		for _, o := range r.Objects {
			if o.Message == nil || chains && o.Kind != kindFilterChain {
				// A result with filter chains is a listener's: its other objects are parts
				// of the chains (their filters), printed inside them.
				continue
			}
			b, err := marshalProto(o.Message)
			if err != nil {
				return fmt.Errorf("printing %s %s: %w", shortKind(o.Kind), o.Name, err)
			}
			objs = append(objs, named{name: o.Name, json: b})
			ordered = ordered || o.Kind == kindFilterChain
		}
	}
	if ordered {
		return writeArray(w, objs)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		if objs[i].name != objs[j].name {
			return objs[i].name < objs[j].name
		}
		return bytes.Compare(objs[i].json, objs[j].json) < 0
	})
	return writeArray(w, objs)
}

// kindFilterChain is the object kind of a listener filter chain: printed in the Result's order.
const kindFilterChain = "envoy.config.listener.v3.FilterChain"

// writeArray writes the objects as a JSON array, one per line group.
func writeArray(w io.Writer, objs []named) error {
	var buf bytes.Buffer
	if len(objs) == 0 {
		buf.WriteString("[]\n")
	} else {
		buf.WriteString("[\n")
		for i, o := range objs {
			buf.WriteString("  ")
			buf.Write(o.json)
			if i < len(objs)-1 {
				buf.WriteString(",")
			}
			buf.WriteString("\n")
		}
		buf.WriteString("]\n")
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// marshalProto returns m in protojson's default form, indented by two spaces for a place one
// level inside a JSON array (the first line unindented). The bytes depend only on m.
func marshalProto(m proto.Message) ([]byte, error) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "  ", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
