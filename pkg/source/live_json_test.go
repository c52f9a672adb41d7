package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// randomJSON writes random JSON of the shapes the API server lists: the light fields, with
// values or null, among fields the light forms skip (objects, arrays, numbers, escapes).
type randomJSON struct {
	r *rand.Rand
	b strings.Builder
}

func (g *randomJSON) str() {
	words := []string{"reviews", "v1", "ns-001", "a.example.com", `q\"uote`, `\u00e9t\u00e9`, "*", ".", ""}
	g.b.WriteString(`"` + words[g.r.IntN(len(words))] + `"`)
}

// value writes any JSON value, nested at most depth deep.
func (g *randomJSON) value(depth int) {
	switch k := g.r.IntN(7); {
	case k == 0 || depth == 0 && k > 3:
		g.str()
	case k == 1:
		fmt.Fprintf(&g.b, "%d", g.r.IntN(70000))
	case k == 2:
		g.b.WriteString([]string{"null", "true", "false", "1.5", "-2", "1e3"}[g.r.IntN(6)])
	case k == 3:
		g.b.WriteString("[]")
	case k == 4:
		g.b.WriteString("[")
		for i := range g.r.IntN(3) + 1 {
			if i > 0 {
				g.b.WriteString(",")
			}
			g.value(depth - 1)
		}
		g.b.WriteString("]")
	default:
		g.object(depth-1, map[string]func(){"x": func() { g.value(depth - 1) }, "timeout": g.str})
	}
}

// object writes an object with a random subset of fields, in random order, each null
// sometimes, with an unknown field sometimes.
func (g *randomJSON) object(depth int, fields map[string]func()) {
	names := make([]string, 0, len(fields)+1)
	for n := range fields {
		if g.r.IntN(3) > 0 {
			names = append(names, n)
		}
	}
	if g.r.IntN(2) == 0 {
		names = append(names, "unknownField")
	}
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	g.b.WriteString("{")
	for i, n := range names {
		if i > 0 {
			g.b.WriteString(",")
		}
		g.b.WriteString(`"` + n + `":`)
		switch {
		case n == "unknownField":
			g.value(depth)
		case g.r.IntN(8) == 0:
			g.b.WriteString("null")
		default:
			fields[n]()
		}
	}
	g.b.WriteString("}")
}

func (g *randomJSON) list(item func()) func() {
	return func() {
		g.b.WriteString("[")
		for i := range g.r.IntN(4) {
			if i > 0 {
				g.b.WriteString(",")
			}
			item()
		}
		g.b.WriteString("]")
	}
}

func (g *randomJSON) strings() func() { return g.list(g.str) }

func (g *randomJSON) destination() {
	g.object(2, map[string]func(){
		"host": g.str, "subset": g.str,
		"port": func() { g.object(1, map[string]func(){"number": func() { fmt.Fprintf(&g.b, "%d", g.r.IntN(65536)) }}) },
	})
}

func (g *randomJSON) routes() func() {
	return g.list(func() {
		g.object(2, map[string]func(){"destination": g.destination, "weight": func() { g.value(0) }})
	})
}

func (g *randomJSON) virtualService() {
	g.object(3, map[string]func(){
		"hosts": g.strings(), "gateways": g.strings(), "exportTo": g.strings(),
		"http": g.list(func() {
			g.object(3, map[string]func(){
				"match":    g.list(func() { g.object(2, map[string]func(){"sourceNamespace": g.str, "uri": func() { g.value(2) }}) }),
				"route":    g.routes(),
				"mirror":   g.destination,
				"mirrors":  g.routes(),
				"delegate": func() { g.object(1, map[string]func(){"name": g.str, "namespace": g.str}) },
				"retries":  func() { g.value(2) },
			})
		}),
		"tcp": g.list(func() { g.object(2, map[string]func(){"route": g.routes(), "match": func() { g.value(2) }}) }),
		"tls": g.list(func() { g.object(2, map[string]func(){"route": g.routes()}) }),
	})
}

func (g *randomJSON) destinationRule() {
	g.object(3, map[string]func(){
		"host": g.str, "exportTo": g.strings(),
		"workloadSelector": func() {
			g.object(2, map[string]func(){"matchLabels": func() { g.object(1, map[string]func(){"app": g.str, "version": g.str}) }})
		},
		"trafficPolicy": func() { g.value(3) },
		"subsets":       g.list(func() { g.value(2) }),
	})
}

// page is a list of n objects as the API server sends it, with spec written by spec.
func (g *randomJSON) page(n int, spec func()) []byte {
	items := make([]string, n)
	for i := range items {
		g.b.Reset()
		spec()
		items[i] = listedObject("networking.istio.io/v1", "X", fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("o-%d", i), g.b.String())
	}
	cont := []string{"", "tok"}[g.r.IntN(2)]
	return fmt.Appendf(nil, `{"apiVersion":"networking.istio.io/v1","kind":"XList","metadata":{"resourceVersion":"9","continue":%q},"items":[%s]}`,
		cont, strings.Join(items, ","))
}

// TestPageJSONDecodesAsEncodingJSON: pages of random VirtualServices and DestinationRules
// decode to the same values through pageJSON as through encoding/json, both the page and the
// light forms read from a raw spec; where one fails, so does the other.
func TestPageJSONDecodesAsEncodingJSON(t *testing.T) {
	g := &randomJSON{r: rand.New(rand.NewPCG(1, 2))}
	for round := range 300 {
		vsPage := g.page(1+g.r.IntN(4), g.virtualService)
		var want, got rawPage[liveEnvelope[json.RawMessage]]
		if err := json.Unmarshal(vsPage, &want); err != nil {
			t.Fatalf("round %d: encoding/json: %v\n%s", round, err, vsPage)
		}
		if err := pageJSON.Unmarshal(vsPage, &got); err != nil {
			t.Fatalf("round %d: pageJSON: %v\n%s", round, err, vsPage)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: pageJSON decoded\n%+v\nencoding/json\n%+v\nfrom %s", round, got, want, vsPage)
		}
		// fetchPage decodes as it reads, through a buffer it overwrites: one byte at a time here.
		var streamed rawPage[liveEnvelope[json.RawMessage]]
		if err := decodePage(iotest.OneByteReader(bytes.NewReader(vsPage)), &streamed); err != nil || !reflect.DeepEqual(streamed, want) {
			t.Fatalf("round %d: decodePage (%v) decoded\n%+v\nencoding/json\n%+v", round, err, streamed, want)
		}
		// The same page read as whole items (Spec.VirtualServiceNeeded reads them undecoded),
		// written compactly and indented.
		var wantItems rawPage[json.RawMessage]
		if err := json.Unmarshal(vsPage, &wantItems); err != nil {
			t.Fatalf("round %d: encoding/json: %v\n%s", round, err, vsPage)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, vsPage, " ", "\t"); err != nil {
			t.Fatal(err)
		}
		for _, page := range [][]byte{vsPage, indented.Bytes()} {
			cont, items, err := readItemPage(iotest.OneByteReader(bytes.NewReader(page)), new([]byte))
			if err != nil || cont != wantItems.Metadata.Continue || len(items) != len(wantItems.Items) {
				t.Fatalf("round %d: readItemPage: %v, continue %q, %d items; encoding/json %+v", round, err, cont, len(items), wantItems)
			}
			for i := range items {
				var got, want bytes.Buffer
				if json.Compact(&got, items[i]) != nil || json.Compact(&want, wantItems.Items[i]) != nil || got.String() != want.String() {
					t.Fatalf("round %d: readItemPage item %d\n%s\nencoding/json\n%s", round, i, items[i], wantItems.Items[i])
				}
			}
		}

		drPage := g.page(1+g.r.IntN(4), g.destinationRule)
		var wantRaw, gotRaw rawPage[liveEnvelope[json.RawMessage]]
		if err := json.Unmarshal(drPage, &wantRaw); err != nil {
			t.Fatalf("round %d: encoding/json: %v\n%s", round, err, drPage)
		}
		if err := pageJSON.Unmarshal(drPage, &gotRaw); err != nil {
			t.Fatalf("round %d: pageJSON: %v\n%s", round, err, drPage)
		}
		if !reflect.DeepEqual(gotRaw, wantRaw) {
			t.Fatalf("round %d: pageJSON decoded\n%+v\nencoding/json\n%+v", round, gotRaw, wantRaw)
		}
		var streamedRaw rawPage[liveEnvelope[json.RawMessage]]
		if err := decodePage(iotest.OneByteReader(bytes.NewReader(drPage)), &streamedRaw); err != nil || !reflect.DeepEqual(streamedRaw, wantRaw) {
			t.Fatalf("round %d: decodePage (%v) decoded\n%+v\nencoding/json\n%+v", round, err, streamedRaw, wantRaw)
		}
		for _, it := range wantRaw.Items {
			var wantDR, gotDR lightDestinationRule
			wantErr := json.Unmarshal(it.Spec, &wantDR)
			gotErr := pageJSON.Unmarshal(it.Spec, &gotDR)
			// On a type error encoding/json goes on and json-iterator stops, so only the error
			// is compared: the caller then decodes the rule in full.
			if (wantErr == nil) != (gotErr == nil) || wantErr == nil && !reflect.DeepEqual(gotDR, wantDR) {
				t.Fatalf("round %d: light DestinationRule %s: pageJSON %+v (%v), encoding/json %+v (%v)", round, it.Spec, gotDR, gotErr, wantDR, wantErr)
			}
		}
	}
}

func TestDecodePageRejectsWhatUnmarshalRejects(t *testing.T) {
	page := `{"metadata":{"continue":"x"},"items":[{"metadata":{"name":"a","namespace":"n"},"spec":{"hosts":["h"]}}]}`
	var p rawPage[liveEnvelope[json.RawMessage]]
	if err := decodePage(strings.NewReader(page+"\n"), &p); err != nil || p.Metadata.Continue != "x" || len(p.Items) != 1 || string(p.Items[0].Spec) != `{"hosts":["h"]}` {
		t.Fatalf("a whole page: %v, %+v", err, p)
	}
	for _, bad := range []string{
		page[:len(page)-1],    // truncated
		page[:len(page)/2],    // truncated in a value
		page + `{"items":[]}`, // a second document
		`{"items":[}`,         // malformed
		``,                    // empty
	} {
		var q rawPage[liveEnvelope[json.RawMessage]]
		uerr := pageJSON.Unmarshal([]byte(bad), &q)
		derr := decodePage(strings.NewReader(bad), &q)
		if uerr == nil || derr == nil {
			t.Errorf("%q: Unmarshal error %v, decodePage error %v; want both to fail", bad, uerr, derr)
		}
	}
}

// TestReadItemPageRejectsBrokenPages: a page cut anywhere, or with a bracket, quote, comma or
// colon out of place, is an error, never items.
func TestReadItemPageRejectsBrokenPages(t *testing.T) {
	page := `{"kind":"VirtualServiceList","metadata":{"continue":"x\"y"},"items":[` +
		`{"metadata":{"name":"a\\"},"spec":{"hosts":["h"],"http":[{"route":[{"destination":{"host":"h","port":{"number":80}},"weight":1.5e1}]}],"x":[true,false,null,[],{}]}},` +
		`{"metadata":{"name":"b"},"spec":{}}]}`
	cont, items, err := readItemPage(strings.NewReader(page+"\n"), new([]byte))
	if err != nil || cont != `x"y` || len(items) != 2 || !strings.HasPrefix(string(items[0]), `{"metadata":{"name":"a\\"}`) || string(items[1]) != `{"metadata":{"name":"b"},"spec":{}}` {
		t.Fatalf("a whole page: %v, %q, %q", err, cont, items)
	}
	for n := range len(page) {
		if _, items, err := readItemPage(strings.NewReader(page[:n]), new([]byte)); err == nil {
			t.Fatalf("page cut at %d (%q) read as %q", n, page[:n], items)
		}
	}
	for _, bad := range []string{
		page + `{}`,
		strings.Replace(page, `"spec":{}}`, `"spec":{]}`, 1),
		strings.Replace(page, `[true,`, `[true,,`, 1),
		strings.Replace(page, `"hosts":`, `"hosts",`, 1),
		strings.Replace(page, `{"name":"b"}`, `{"name" "b"}`, 1),
		strings.Replace(page, `[{"route"`, `[{route"`, 1),
		strings.Replace(page, `"items":[`, `"items":{`, 1),
		`[]`, ``,
	} {
		if _, items, err := readItemPage(strings.NewReader(bad), new([]byte)); err == nil {
			t.Errorf("%s read as %q", bad, items)
		}
	}
}
