package source

import (
	"bytes"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scanned is what scanHeader found in a YAML document without parsing it.
type scanned struct {
	// h holds apiVersion, kind, metadata.name and metadata.namespace as a full parse reads them
	// (an absent or empty field is ""); Items is never set.
	h header
	// line is the 1-based line, within the document, of the first key of its root mapping: the
	// position a full parse gives the object.
	line int
}

// scanHeader reads the header of one YAML document (a chunk of splitYAML) line by line, without
// parsing it, so that the documents a read plan discards are never parsed. It follows the block
// style that kubectl, Helm and generators write: a root mapping at column 0, plain or simply
// quoted scalars for the header fields, metadata as a block or a one-line flow mapping.
// Everything else is only tokenized far enough to know where each line belongs: quoted scalars
// and flow collections must close on their line, block scalars (`|`, `>`) are skipped by their
// indentation.
//
// ok is false whenever the scan cannot be sure that a full parse reads the same header: a root
// that is not a block mapping, a header key spelled in another case (encoding/json would still
// match it), a repeated key at the root or in metadata, anchors, aliases, tags or a non-trivial
// scalar in a header field, a multi-line quoted scalar or flow collection anywhere, tabs in
// indentation, directives, `...`, complex keys. The caller then parses the document in full.
// A document the scan accepts may still be malformed below the header; the scan does not find
// that.
func scanHeader(text []byte) (s scanned, ok bool) {
	hs := headerScan{blockAt: -1}
	for line := range bytes.Lines(text) {
		hs.lineNo++
		line = bytes.TrimSuffix(line, []byte("\n"))
		if !hs.line(bytes.TrimSuffix(line, []byte("\r"))) {
			return hs.s, false
		}
	}
	if hs.s.line == 0 {
		// Only comments: the document is empty, and a full parse ignores it as well.
		return hs.s, false
	}
	return hs.s, true
}

// headerScan is the state of scanHeader between lines.
type headerScan struct {
	s      scanned
	lineNo int
	// blockAt is the indentation a block scalar's lines must exceed; -1 outside one.
	blockAt int
	// top is the current root key; topInline says its value started on the key's line.
	top       string
	topInline bool
	topKeys   keySet
	// metaIndent is the indentation of metadata's keys once known; 0 before.
	metaIndent int
	meta       string
	metaInline bool
	metaKeys   keySet
}

// line scans one line; false when the scan cannot be sure of the header.
func (hs *headerScan) line(line []byte) bool {
	ind := 0
	for ind < len(line) && line[ind] == ' ' {
		ind++
	}
	rest := line[ind:]
	if hs.blockAt >= 0 {
		if len(bytes.TrimLeft(rest, " \t")) == 0 || ind > hs.blockAt {
			return true
		}
		hs.blockAt = -1
	}
	switch {
	case len(rest) == 0:
		return true
	case rest[0] == '\t':
		// Blank but for tabs, or tabs in indentation.
		return len(bytes.TrimLeft(rest, " \t")) == 0
	case rest[0] == '#':
		return true
	case ind == 0:
		return hs.rootLine(rest)
	case hs.s.line == 0 || hs.topInline:
		// A root that is not at column 0, or the continuation of a root key's scalar.
		return false
	case hs.top != "metadata":
		return hs.lex(rest, ind, ind)
	}
	return hs.metadataLine(rest, ind)
}

// keySet is the keys seen in one mapping: the first few in place (a header scan then makes no
// allocation for them), the rest in a map.
type keySet struct {
	few  [8]string
	n    int
	more map[string]bool
}

// add adds key, reporting false when it was already there.
func (k *keySet) add(key string) bool {
	for _, s := range k.few[:k.n] {
		if s == key {
			return false
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return true
	}
	if k.more[key] {
		return false
	}
	if k.more == nil {
		k.more = map[string]bool{}
	}
	k.more[key] = true
	return true
}

// lex tokenizes the rest of a line whose content starts at column col, in a collection
// indented by indent, and notes a block scalar it starts.
func (hs *headerScan) lex(rest []byte, col, indent int) bool {
	b, ok := lexLine(rest, col, indent)
	if ok {
		hs.blockAt = b
	}
	return ok
}

// rootLine scans a line at column 0: a root key, or an item of the sequence that is the
// previous root key's value.
func (hs *headerScan) rootLine(rest []byte) bool {
	if isSeqEntry(rest) {
		if hs.top == "" || hs.topInline || hs.top == "metadata" {
			return false
		}
		return hs.lex(rest, 0, 0)
	}
	if rest[0] == '%' || bytes.HasPrefix(rest, []byte("...")) {
		return false
	}
	key, val, ok := simpleKey(rest)
	if !ok || !hs.topKeys.add(key) || foldsToHeaderKey(key, "apiVersion", "kind", "metadata", "items") {
		return false
	}
	if hs.s.line == 0 {
		hs.s.line = hs.lineNo
	}
	hs.top, hs.topInline = key, len(bytes.TrimSpace(stripComment(val))) > 0
	switch key {
	case "apiVersion", "kind":
		v, ok := simpleScalar(val)
		if !ok {
			return false
		}
		if key == "kind" {
			hs.s.h.Kind = v
		} else {
			hs.s.h.APIVersion = v
		}
		return true
	case "metadata":
		hs.metaIndent, hs.meta, hs.metaInline = 0, "", false
		hs.metaKeys = keySet{}
		return !hs.topInline || scanFlowMetadata(val, &hs.s.h)
	}
	b, ok := lexLine(val, len(rest)-len(val), 0)
	if ok && b >= 0 {
		hs.topInline = false
		hs.blockAt = b
	}
	return ok
}

// metadataLine scans a line inside the root's metadata block mapping, indented by ind.
func (hs *headerScan) metadataLine(rest []byte, ind int) bool {
	if hs.metaIndent == 0 {
		hs.metaIndent = ind
	}
	switch {
	case ind < hs.metaIndent:
		return false
	case ind > hs.metaIndent || isSeqEntry(rest):
		// Inside the value of a metadata key.
		return hs.meta != "" && !hs.metaInline && hs.lex(rest, ind, ind)
	}
	key, val, ok := simpleKey(rest)
	if !ok || !hs.metaKeys.add(key) || foldsToHeaderKey(key, "name", "namespace") {
		return false
	}
	hs.meta, hs.metaInline = key, len(bytes.TrimSpace(stripComment(val))) > 0
	switch key {
	case "name", "namespace":
		v, ok := simpleScalar(val)
		if !ok {
			return false
		}
		if key == "name" {
			hs.s.h.Metadata.Name = v
		} else {
			hs.s.h.Metadata.Namespace = v
		}
		return true
	}
	b, ok := lexLine(val, ind+len(rest)-len(val), ind)
	if ok && b >= 0 {
		hs.metaInline = false
		hs.blockAt = b
	}
	return ok
}

// isSeqEntry reports whether a line's content starts a block sequence entry (`- ` or `-`).
func isSeqEntry(rest []byte) bool {
	return rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ')
}

// foldsToHeaderKey reports whether key is one of names in another case: encoding/json matches
// field names case-insensitively, so such a key would feed the header too.
func foldsToHeaderKey(key string, names ...string) bool {
	for _, n := range names {
		if key != n && strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// simpleKey splits `key: value` where key is a plain scalar of letters, digits and `._/-`;
// value is what follows the colon.
func simpleKey(rest []byte) (string, []byte, bool) {
	i := 0
	for i < len(rest) && isSimpleChar(rest[i]) {
		i++
	}
	if i == 0 || i == len(rest) || rest[i] != ':' || (i+1 < len(rest) && rest[i+1] != ' ') {
		return "", nil, false
	}
	return string(rest[:i]), rest[i+1:], true
}

func isSimpleChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-'
}

// simpleScalar reads the value of a header field: a plain scalar that YAML 1.1 reads as a string
// (starting with a letter, made of letters, digits and `._/-`), or a single- or double-quoted
// scalar without escapes, optionally followed by a comment. An empty quoted scalar is "".
func simpleScalar(val []byte) (string, bool) {
	v := bytes.TrimLeft(val, " ")
	if len(v) == 0 {
		return "", false
	}
	var out []byte
	switch q := v[0]; q {
	case '"', '\'':
		end := bytes.IndexByte(v[1:], q)
		if end < 0 {
			return "", false
		}
		out, v = v[1:1+end], v[2+end:]
		for _, c := range out {
			if !isSimpleChar(c) {
				return "", false
			}
		}
	default:
		i := 0
		for i < len(v) && isSimpleChar(v[i]) {
			i++
		}
		out, v = v[:i], v[i:]
		c := out
		if len(c) == 0 || !(c[0] >= 'a' && c[0] <= 'z' || c[0] >= 'A' && c[0] <= 'Z') {
			return "", false
		}
		if _, str := resolvePlain(c); !str {
			return "", false
		}
	}
	if len(v) > 0 && v[0] != ' ' {
		return "", false
	}
	if t := bytes.TrimLeft(v, " "); len(t) > 0 && t[0] != '#' {
		return "", false
	}
	return string(out), true
}

// stripComment drops a trailing comment from a value that lexLine accepts.
func stripComment(val []byte) []byte {
	if i := bytes.Index(val, []byte(" #")); i >= 0 {
		return val[:i]
	}
	if bytes.HasPrefix(bytes.TrimLeft(val, " "), []byte("#")) {
		return nil
	}
	return val
}

// scanFlowMetadata reads `{name: a, namespace: b}`: a one-line flow mapping of plain keys and
// simple values (no quotes, no nesting), optionally followed by a comment.
func scanFlowMetadata(val []byte, h *header) bool {
	v := bytes.TrimSpace(val)
	if i := bytes.Index(v, []byte(" #")); i >= 0 {
		v = bytes.TrimSpace(v[:i])
	}
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return false
	}
	body := bytes.TrimSpace(v[1 : len(v)-1])
	if len(body) == 0 {
		return true
	}
	seen := map[string]bool{}
	for _, e := range bytes.Split(body, []byte(",")) {
		e = bytes.TrimSpace(e)
		key, rest, ok := simpleKey(e)
		if !ok || seen[key] || foldsToHeaderKey(key, "name", "namespace") {
			return false
		}
		seen[key] = true
		if bytes.ContainsAny(rest, "{}[]\"'#&*!|>") {
			return false
		}
		if key != "name" && key != "namespace" {
			if len(bytes.TrimSpace(rest)) == 0 {
				return false
			}
			continue
		}
		s, ok := simpleScalar(rest)
		if !ok {
			return false
		}
		if key == "name" {
			h.Metadata.Name = s
		} else {
			h.Metadata.Namespace = s
		}
	}
	return true
}

// lexLine tokenizes one line of block YAML (or the rest of one, from column col) far enough to
// know that nothing on it continues on the next line: quoted scalars close, flow collections
// close. entry is the column of the collection entry the line belongs to. It returns the
// indentation a following block scalar's lines exceed when the line ends with a block scalar
// indicator (`|`, `>-`...), -1 otherwise; ok is false for a line it does not follow.
func lexLine(s []byte, col, entry int) (blockAt int, ok bool) {
	if !hasOpener(s) {
		// Nothing on the line can open a quoted scalar, a flow collection or a block scalar.
		// A plain scalar may go on over the next lines, but only over lines indented more
		// than the collection that holds it, and so never over a root or metadata key.
		return -1, true
	}
	flow := 0
	tokStart := -1
	for i := 0; i < len(s); {
		c := s[i]
		next := byte(' ')
		if i+1 < len(s) {
			next = s[i+1]
		}
		switch {
		case c == ' ':
			i++
		case c == '\t':
			i++
		case c == '#':
			if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' {
				return -1, false
			}
			if flow > 0 {
				return -1, false
			}
			return -1, true
		case c == '"':
			tokStart = col + i
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' {
					j++
					continue
				}
				if s[j] == '"' {
					break
				}
			}
			if j >= len(s) {
				return -1, false
			}
			i = j + 1
		case c == '\'':
			tokStart = col + i
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(s) {
				return -1, false
			}
			i = j + 1
		case c == '[' || c == '{':
			flow++
			i++
		case c == ']' || c == '}':
			if flow == 0 {
				return -1, false
			}
			flow--
			i++
		case c == ',':
			if flow == 0 {
				return -1, false
			}
			i++
		case c == '-' && next == ' ' && flow == 0:
			entry = col + i
			tokStart = -1
			i++
		case c == '?' && next == ' ':
			return -1, false
		case c == ':' && (next == ' ' || flow > 0 && strings.IndexByte(",[]{}", next) >= 0 || i+1 == len(s)):
			if flow == 0 {
				if tokStart < 0 {
					return -1, false
				}
				entry = tokStart
			}
			tokStart = -1
			i++
		case (c == '|' || c == '>') && flow == 0:
			j := i + 1
			for j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if t := bytes.TrimLeft(s[j:], " \t"); len(t) > 0 && (t[0] != '#' || j == len(s) || (s[j] != ' ' && s[j] != '\t')) {
				return -1, false
			}
			return entry, true
		case c == '&' || c == '!' || c == '*':
			j := i + 1
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && (flow == 0 || strings.IndexByte(",[]{}", s[j]) < 0) {
				j++
			}
			i = j
		case c == '@' || c == '`' || c == '%':
			return -1, false
		default:
			// A plain scalar: it ends at `: `, at ` #`, and in a flow collection at an indicator.
			tokStart = col + i
			j := i + 1
			for j < len(s) {
				d := s[j]
				if d == ':' && (j+1 == len(s) || s[j+1] == ' ' || flow > 0 && strings.IndexByte(",[]{}", s[j+1]) >= 0) {
					break
				}
				if (d == ' ' || d == '\t') && j+1 < len(s) && s[j+1] == '#' {
					break
				}
				if flow > 0 && strings.IndexByte(",[]{}", d) >= 0 {
					break
				}
				j++
			}
			i = j
		}
	}
	if flow > 0 {
		return -1, false
	}
	return -1, true
}

// openers are the bytes that can start a construct spanning lines: quoted scalars, flow
// collections, block scalars.
var openers = [256]bool{'"': true, '\'': true, '[': true, '{': true, '|': true, '>': true}

func hasOpener(s []byte) bool {
	for _, c := range s {
		if openers[c] {
			return true
		}
	}
	return false
}

// skips reports whether loadDocument drops a root object with header h without decoding it and
// without an issue: a kind the engines do not read, a ConfigMap other than the mesh ConfigMap,
// and, with FilterFiles, an object no planned read returns. It follows loadDocument's checks in
// order, so that every object loadDocument reports or keeps is loaded in full. text is the
// document's: an object a planned read returns only by a label (Read.Labeled) is skipped when
// the label cannot be in it.
func (l *loader) skips(h header, text []byte) bool {
	if h.Kind == "" || h.APIVersion == "" || strings.HasSuffix(h.Kind, "List") {
		return false
	}
	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil {
		return false
	}
	ns := h.Metadata.Namespace
	if gv.Group == "" && h.Kind == kindConfigMap {
		if ns == "" {
			ns = l.spec.DefaultNamespace
		}
		return gv.Version != "v1" || h.Metadata.Name != MeshConfigMapName(l.spec.Revision) || ns != l.spec.IstioNamespace
	}
	ki := kindByGroupKind(gv.Group, h.Kind)
	if ki == nil {
		// Kept: a kind of another group, and a misspelt kind (loadDocument suggests one).
		return !ownGroup(gv.Group) || (kindByName(h.Kind) == nil && kindHint(gv.Group, h.Kind) == "")
	}
	if !ki.serves(gv.Version) || h.Metadata.Name == "" || !l.spec.FilterFiles {
		return false
	}
	ns = l.objectNamespace(ki, ns)
	if !l.planned(ki, ns, h.Metadata.Name) {
		return true
	}
	// Laid over a cluster, an object without the label may still replace a live one that has
	// it: loadDocument decides, knowing the live objects.
	keys := l.labelledOnly(ki, ns, h.Metadata.Name)
	return keys != nil && !l.spec.Overlay && !mayHoldLabel(text, keys)
}

// mayHoldLabel reports whether text may hold a label of keys: the name part of one (after its
// prefix's slash) is in it. A label key is written out in YAML and JSON alike, so an object
// whose text lacks every name has none of the labels, and is never decoded for them.
func mayHoldLabel(text []byte, keys []string) bool {
	for _, k := range keys {
		if i := strings.LastIndexByte(k, '/'); i >= 0 {
			k = k[i+1:]
		}
		if bytes.Contains(text, []byte(k)) {
			return true
		}
	}
	return false
}

// skipsJSON is skips for one value of a JSON stream, whose header is read as loadDocument reads
// it. It saves building the value's position tree.
func (l *loader) skipsJSON(raw []byte) bool {
	js := bytes.TrimSpace(raw)
	if len(js) == 0 || js[0] != '{' {
		return false
	}
	var h header
	_ = json.Unmarshal(js, &h)
	return l.skips(h, js)
}
