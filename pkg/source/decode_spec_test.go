package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the decoder decodeSpec must agree with.
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	sigsyaml "sigs.k8s.io/yaml"
)

// specCase is the JSON of one Istio spec and the kind it is the spec of.
type specCase struct {
	kind *kindInfo
	name string
	js   []byte
}

// testdataSpecs are the specs of every Istio object in the repository's test files.
func testdataSpecs(t *testing.T) []specCase {
	t.Helper()
	byKind := map[string]*kindInfo{}
	for _, ki := range kindTable {
		if ki.fresh != nil {
			byKind[ki.kind] = ki
		}
	}
	var out []specCase
	for _, root := range []string{"../../testdata", "testdata"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, ch := range splitYAML(data) {
				js, err := sigsyaml.YAMLToJSON(ch.text)
				if err != nil {
					continue
				}
				var env struct {
					Kind string          `json:"kind"`
					Spec json.RawMessage `json:"spec"`
				}
				if json.Unmarshal(js, &env) != nil || byKind[env.Kind] == nil || len(env.Spec) == 0 {
					continue
				}
				out = append(out, specCase{kind: byKind[env.Kind], name: fmt.Sprintf("%s#%d", path, i), js: env.Spec})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// specDecoder is one way of decoding a spec (decodeSpec, decodeSpecAsClientset) and the jsonpb
// decode it must agree with.
type specDecoder struct {
	name   string
	decode func(js []byte, spec istioSpec) error
	jsonpb func(js []byte, spec istioSpec) error
}

var specDecoders = []specDecoder{
	{
		name:   "decodeSpec",
		decode: func(js []byte, spec istioSpec) error { return decodeSpec(js, spec) },
		jsonpb: func(js []byte, spec istioSpec) error {
			return (&jsonpb.Unmarshaler{}).Unmarshal(bytes.NewReader(js), protoadapt.MessageV1Of(spec))
		},
	},
	{
		name:   "decodeSpecAsClientset",
		decode: decodeSpecAsClientset,
		jsonpb: func(js []byte, spec istioSpec) error { return spec.UnmarshalJSON(js) },
	},
}

func requireSameDecode(t *testing.T, name string, ki *kindInfo, js []byte) {
	t.Helper()
	for _, d := range specDecoders {
		got, want := ki.fresh().spec, ki.fresh().spec
		gotErr, wantErr := d.decode(js, got), d.jsonpb(js, want)
		switch {
		case (gotErr == nil) != (wantErr == nil):
			t.Errorf("%s (%s): %s error %v, jsonpb error %v\n%s", name, ki.kind, d.name, gotErr, wantErr, js)
		case gotErr != nil && !jsonpbMayFail(d, ki, js, gotErr.Error()):
			t.Errorf("%s (%s): %s error %q, jsonpb error %q\n%s", name, ki.kind, d.name, gotErr, wantErr, js)
		case gotErr == nil && !proto.Equal(got, want):
			t.Errorf("%s (%s): %s gives %v, jsonpb %v\n%s", name, ki.kind, d.name, got, want, js)
		}
	}
}

// jsonpbMayFail reports whether d's jsonpb decode fails on js with the error msg in one of a few
// runs: with several unknown fields, the one it names depends on map order.
func jsonpbMayFail(d specDecoder, ki *kindInfo, js []byte, msg string) bool {
	for range 50 {
		if err := d.jsonpb(js, ki.fresh().spec); err != nil && err.Error() == msg {
			return true
		}
	}
	return false
}

// decodeSpec and decodeSpecAsClientset decode what jsonpb decodes (strictly, and with unknown
// fields allowed as the Istio clientset does), to the same message, and reject what it rejects,
// with the same error: on every Istio spec of the test files, on edge cases where the two
// decoders are known to differ, and on random mutations of the specs (numbers in fraction and
// exponent form, as strings, nulls, unknown and duplicate fields, lists with nulls, Go duration
// strings, enums as numbers).
func TestDecodeSpecAsJsonpb(t *testing.T) {
	specs := testdataSpecs(t)
	if len(specs) < 50 {
		t.Fatalf("%d specs found in the test files, want the repository's", len(specs))
	}
	dr := kindByName("DestinationRule")
	if dr == nil {
		t.Fatal("no DestinationRule kind")
	}
	edges := []string{
		`{"host":"a","trafficPolicy":{"connectionPool":{"tcp":{"maxConnections":1.0}}}}`,
		`{"host":"a","trafficPolicy":{"connectionPool":{"tcp":{"maxConnections":1e2}}}}`,
		`{"host":"a","trafficPolicy":{"connectionPool":{"tcp":{"maxConnections":-1E+2}}}}`,
		`{"host":"a","trafficPolicy":{"connectionPool":{"tcp":{"maxConnections":"5"}}}}`,
		`{"host":"a","host":"b"}`,
		`{"host":"a","subsets":[null]}`,
		`{"host":"a"}{"host":"b"}`,
		`{"host":"a","trafficPolicy":{"connectionPool":{"tcp":{"connectTimeout":"1m"}}}}`,
		`{"host":"a","trafficPolicy":{"connectionPool":{"tcp":{"connectTimeout":"1.5s"}}}}`,
		`{"host":"a","trafficPolicy":{"loadBalancer":{"simple":3}}}`,
		`{"host":"a","trafficPolicy":{"loadBalancer":{"simple":"round_robin"}}}`,
		`{"host":"a","trafficPolicy":{"outlierDetection":{"consecutive5xxErrors":{"value":5}}}}`,
		`{"host":"a","trafficPolicy":{"outlierDetection":{"minHealthPercent":2147483648}}}`,
		`{"host":"a","trafficPolicy":{"outlierDetection":{"consecutive5xxErrors":-0}}}`,
		`{"host":"a","trafficPolicy":{"outlierDetection":{"minHealthPercent":-0}}}`,
		`{"host":"a","trafficPolicy":{"tls":{"insecureSkipVerify":"true"}}}`,
		`{"host":"a","subsets":[{"name":"v1","labels":{"a":1}}]}`,
		`{"host":"a","trafficPolicy":{"loadBalancer":{"localityLbSetting":{"distribute":[{"from":"a","to":{"b":"100"}}]}}}}`,
		`{"host":"a.1e5","exportTo":["1.5"]}`,
		`{"host":"a\"1.5"}`,
		`{"host":"a","export_to":["."],"Host":"b"}`,
	}
	for i, e := range edges {
		requireSameDecode(t, fmt.Sprintf("edge %d", i), dr, []byte(e))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, sc := range specs {
		requireSameDecode(t, sc.name, sc.kind, sc.js)
		for m := range 20 {
			js, ok := mutateJSON(r, sc.js)
			if ok {
				requireSameDecode(t, fmt.Sprintf("%s mutation %d", sc.name, m), sc.kind, js)
			}
		}
	}
}

// mutateJSON changes one random value of js (see mutateValue), or puts a duplicate of its first
// field, with another value, at the front.
func mutateJSON(r *rand.Rand, js []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if obj, ok := v.(map[string]any); ok && len(obj) > 0 && r.IntN(8) == 0 {
		keys := sortedKeys(obj)
		k := keys[r.IntN(len(keys))]
		first, err := json.Marshal(map[string]any{k: mutateValue(r, obj[k])})
		if err != nil || len(js) < 2 {
			return nil, false
		}
		return append(append(first[:len(first)-1:len(first)-1], ','), js[1:]...), true
	}
	holder := []any{v}
	var slots []func(any)
	var vals []any
	var walk func(x any, set func(any))
	walk = func(x any, set func(any)) {
		slots, vals = append(slots, set), append(vals, x)
		switch x := x.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(x[k], func(n any) { x[k] = n })
			}
		case []any:
			for i := range x {
				walk(x[i], func(n any) { x[i] = n })
			}
		}
	}
	walk(holder[0], func(n any) { holder[0] = n })
	i := r.IntN(len(slots))
	slots[i](mutateValue(r, vals[i]))
	out, err := json.Marshal(holder[0])
	return out, err == nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func mutateValue(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case json.Number:
		switch r.IntN(5) {
		case 0:
			return json.Number(string(x) + ".0")
		case 1:
			return json.Number(string(x) + "e0")
		case 2:
			return string(x)
		case 3:
			return json.Number("-" + strings.TrimPrefix(string(x), "-"))
		default:
			return nil
		}
	case string:
		switch r.IntN(6) {
		case 0:
			return json.Number("7")
		case 1:
			return true
		case 2:
			return []any{"1m", "90s", "1.5s", "0.5"}[r.IntN(4)]
		case 3:
			return nil
		case 4:
			return json.Number("1")
		default:
			return strings.ToLower(x)
		}
	case map[string]any:
		switch r.IntN(3) {
		case 0:
			x["zzUnknown"] = json.Number("1")
			return x
		case 1:
			return nil
		default:
			return []any{x}
		}
	case []any:
		switch r.IntN(3) {
		case 0:
			return append(x, nil)
		case 1:
			return nil
		default:
			return map[string]any{}
		}
	case bool:
		return []any{"true", json.Number("1"), nil}[r.IntN(3)]
	default:
		return json.Number("2.5")
	}
}

func TestPlainNumbers(t *testing.T) {
	for js, want := range map[string]bool{
		`{"a":1,"b":-20,"c":[3,4]}`:          true,
		`{"a":"1.5","b":"1e5","c":"x\"2.5"}`: true,
		`{"a":true,"b":false,"c":null}`:      true,
		`{"a":1.5}`:                          false,
		`{"a":[1,2e3]}`:                      false,
		`{"a":-1E+2}`:                        false,
		`{"a":"\\","b":0.5}`:                 false,
		`1.0`:                                false,
	} {
		if got := plainNumbers([]byte(js)); got != want {
			t.Errorf("plainNumbers(%s) = %v, want %v", js, got, want)
		}
	}
}
