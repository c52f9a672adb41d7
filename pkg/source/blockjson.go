package source

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// blockToJSON converts one YAML document (a chunk of splitYAML) to exactly the JSON that
// sigs.k8s.io/yaml's YAMLToJSONStrict gives for it, without the round trip through yaml.v2's
// generic values and encoding/json's reflection (five times the time, on a mesh's manifests).
// It reads the block style that kubectl, Helm and generators write, the style scanHeader
// reads: a root block mapping; block mappings and sequences (a sequence may sit at its key's
// indentation); plain, single-quoted and simple double-quoted scalars on one line; literal
// block scalars (`|`, `|-`); flow mappings and sequences of scalars on one line (`{app: a}`,
// `["*"]`, `[]`); comments.
//
// ok is false whenever the document holds anything else, or anything whose meaning it would
// have to guess: bytes outside printable ASCII (tabs, carriage returns, UTF-8), anchors,
// aliases, tags, directives and document markers, complex keys, merge keys, keys of over
// maxKey bytes, flows that nest or span lines, folded or kept block scalars, multi-line plain
// or quoted scalars, escapes in double quotes, a key that YAML 1.1 reads as other than a
// string, floats and timestamps (their JSON spelling is encoding/json's), a repeated key
// (YAMLToJSONStrict's error), a malformed line. The caller then converts the document with
// sigs.k8s.io/yaml, which also words any error.
//
// Scalars resolve as yaml.v2 resolves them (go.yaml.in/yaml/v2 resolve.go, resolve): the YAML
// 1.1 booleans (yes, on, y, ...) and nulls, integers by strconv.ParseInt with base 0 after
// underscores are removed (0x1F, 010 octal, +1), then unsigned; everything else is a string.
// The output matches encoding/json's: object keys sorted, `<`, `>` and `&` escaped.
func blockToJSON(text []byte) (js []byte, ok bool) {
	for _, c := range text {
		if (c < 0x20 && c != '\n') || c > 0x7e {
			return nil, false
		}
	}
	p := parsers.Get().(*blockParser)
	defer p.release()
	p.finalBreak = bytes.HasSuffix(text, []byte("\n"))
	for line := range bytes.Lines(text) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		ind := skipSpaces(line, 0)
		if ind == 0 && (bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("..."))) {
			return nil, false // a document marker, or text that a reader could take for one
		}
		p.lines = append(p.lines, blockLine{ind: ind, text: line[ind:]})
	}
	i := p.next(0)
	if i == len(p.lines) || p.lines[i].ind != 0 || isSeqEntry(p.lines[i].text) {
		return nil, false
	}
	root, end, ok := p.mapping(i, 0)
	if !ok || p.next(end) != len(p.lines) {
		return nil, false
	}
	return root.appendJSON(make([]byte, 0, len(text)+len(text)/4))
}

// blockLine is a line of the document: its indentation in spaces and the rest.
type blockLine struct {
	ind  int
	text []byte
}

// blank reports whether the line is empty, spaces or a comment.
func (l blockLine) blank() bool { return len(l.text) == 0 || l.text[0] == '#' }

type blockParser struct {
	lines []blockLine
	// finalBreak is set when the document ends with a line break.
	finalBreak bool
	// keys and vals are the entries of the collections being read, innermost last; each
	// collection copies its own out when it ends.
	keys [][]byte
	vals []blockValue
}

// parsers keeps the parsers' buffers from one document to the next.
var parsers = sync.Pool{New: func() any { return new(blockParser) }}

// release empties p, keeping its buffers' capacity, and puts it back in parsers.
func (p *blockParser) release() {
	clear(p.lines)
	clear(p.keys)
	clear(p.vals)
	p.lines, p.keys, p.vals = p.lines[:0], p.keys[:0], p.vals[:0]
	parsers.Put(p)
}

// collected is the collection of kind whose entries are p's keys from keyBase on and values
// from valBase on, which it takes off.
func (p *blockParser) collected(kind byte, keyBase, valBase int) blockValue {
	v := blockValue{kind: kind, keys: slices.Clone(p.keys[keyBase:]), vals: slices.Clone(p.vals[valBase:])}
	clear(p.keys[keyBase:])
	clear(p.vals[valBase:])
	p.keys, p.vals = p.keys[:keyBase], p.vals[:valBase]
	return v
}

// next is the index of the first line at or after i that is not blank.
func (p *blockParser) next(i int) int {
	for i < len(p.lines) && p.lines[i].blank() {
		i++
	}
	return i
}

// blockValue is a converted value: a mapping, a sequence, a scalar's JSON or a string.
type blockValue struct {
	kind byte // 'm', 's', 'j' (text is JSON) or 'q' (text is a string to quote)
	text []byte
	keys [][]byte
	vals []blockValue
}

var (
	jsonNull  = blockValue{kind: 'j', text: []byte("null")}
	jsonTrue  = blockValue{kind: 'j', text: []byte("true")}
	jsonFalse = blockValue{kind: 'j', text: []byte("false")}
)

// mapping reads the block mapping whose keys are at indentation ind, from line i (not blank)
// on; end is the first line after it.
func (p *blockParser) mapping(i, ind int) (v blockValue, end int, ok bool) {
	keyBase, valBase := len(p.keys), len(p.vals)
	for i = p.next(i); i < len(p.lines); i = p.next(i) {
		l := p.lines[i]
		if l.ind < ind {
			break
		}
		if l.ind > ind || isSeqEntry(l.text) {
			return blockValue{}, 0, false
		}
		key, rest, isKey := mappingKey(l.text)
		if !isKey {
			return blockValue{}, 0, false
		}
		val, after, ok := p.value(i, ind, rest, true)
		if !ok {
			return blockValue{}, 0, false
		}
		p.keys = append(p.keys, key)
		p.vals = append(p.vals, val)
		i = after
	}
	return p.collected('m', keyBase, valBase), i, true
}

// sequence reads the block sequence whose entries' dashes are at indentation ind.
func (p *blockParser) sequence(i, ind int) (v blockValue, end int, ok bool) {
	keyBase, valBase := len(p.keys), len(p.vals)
	for i = p.next(i); i < len(p.lines); i = p.next(i) {
		l := p.lines[i]
		if l.ind < ind || (l.ind == ind && !isSeqEntry(l.text)) {
			break
		}
		if l.ind > ind {
			return blockValue{}, 0, false
		}
		sp := skipSpaces(l.text, 1) - 1
		rest := l.text[1+sp:]
		if len(rest) > 0 && rest[0] != '#' {
			if isSeqEntry(rest) {
				return blockValue{}, 0, false // a sequence in a sequence's entry
			}
			if _, _, isKey := mappingKey(rest); isKey {
				// A mapping that starts on the entry's line: its keys sit at the column of the
				// first one. The line is read again as that mapping's first line.
				col := ind + 1 + sp
				p.lines[i] = blockLine{ind: col, text: rest}
				m, after, ok := p.mapping(i, col)
				if !ok {
					return blockValue{}, 0, false
				}
				p.vals = append(p.vals, m)
				i = after
				continue
			}
		}
		val, after, ok := p.value(i, ind, rest, false)
		if !ok {
			return blockValue{}, 0, false
		}
		p.vals = append(p.vals, val)
		i = after
	}
	return p.collected('s', keyBase, valBase), i, true
}

// value reads the value that follows a key or a dash on line i (rest, the text after it) in a
// collection at indentation ind: a scalar or block scalar on the line, or the block that the
// following lines indent under it; after is the first line after the value. inMapping allows a
// sequence at the key's own indentation.
func (p *blockParser) value(i, ind int, rest []byte, inMapping bool) (v blockValue, after int, ok bool) {
	if len(rest) == 0 || rest[0] == '#' {
		j := p.next(i + 1)
		switch {
		case j == len(p.lines) || p.lines[j].ind < ind:
			return jsonNull, j, true
		case p.lines[j].ind == ind:
			if inMapping && isSeqEntry(p.lines[j].text) {
				return p.sequence(j, ind)
			}
			return jsonNull, j, true
		case isSeqEntry(p.lines[j].text):
			return p.sequence(j, p.lines[j].ind)
		default:
			return p.mapping(j, p.lines[j].ind)
		}
	}
	if rest[0] == '|' {
		if !inMapping {
			return blockValue{}, 0, false
		}
		return p.literal(i, ind, rest[1:])
	}
	v, ok = inlineScalar(rest)
	if !ok {
		return blockValue{}, 0, false
	}
	// A more indented line after a scalar would continue it (a multi-line plain scalar) or be
	// an error.
	if j := p.next(i + 1); j < len(p.lines) && p.lines[j].ind > ind {
		return blockValue{}, 0, false
	}
	return v, i + 1, true
}

// literal reads the literal block scalar whose header (after `|`) is head, on line i, the value
// of a key at indentation ind: clipped (`|`) or stripped (`|-`).
func (p *blockParser) literal(i, ind int, head []byte) (v blockValue, after int, ok bool) {
	strip := false
	if len(head) > 0 && head[0] == '-' {
		strip, head = true, head[1:]
	}
	if h := bytes.TrimLeft(head, " "); len(h) > 0 && (h[0] != '#' || len(h) == len(head)) {
		return blockValue{}, 0, false // an indentation indicator, `+`, or text after the header
	}
	// The content's indentation is that of its first non-empty line.
	j := i + 1
	for j < len(p.lines) && len(p.lines[j].text) == 0 {
		j++
	}
	if j == len(p.lines) || p.lines[j].ind <= ind {
		return blockValue{}, 0, false // an empty block scalar
	}
	m := p.lines[j].ind
	var b strings.Builder
	end := i + 1
	for k := i + 1; k < len(p.lines); k++ {
		l := p.lines[k]
		if len(l.text) == 0 {
			if l.ind > m {
				return blockValue{}, 0, false // spaces beyond the indentation on an empty line
			}
			b.WriteByte('\n')
			continue
		}
		if l.ind < m {
			break
		}
		b.WriteString(strings.Repeat(" ", l.ind-m))
		b.Write(l.text)
		b.WriteByte('\n')
		end = k + 1
	}
	// Clipped, the value keeps the line break after its last line, if there is one.
	s := strings.TrimRight(b.String(), "\n")
	if !strip && (end < len(p.lines) || p.finalBreak) {
		s += "\n"
	}
	if j := p.next(end); j < len(p.lines) && p.lines[j].ind > ind {
		return blockValue{}, 0, false
	}
	return blockValue{kind: 'q', text: []byte(s)}, end, true
}

// mappingKey splits `key: rest` (rest without its leading spaces); isKey is false when text is
// not a simple key of a block mapping, or the key is not a string to YAML 1.1.
func mappingKey(text []byte) (key, rest []byte, isKey bool) {
	var after []byte
	switch text[0] {
	case '\'', '"':
		s, n, ok := quoted(text)
		if !ok || n > maxKey {
			return nil, nil, false
		}
		key, after = s, text[n:]
		if len(after) == 0 || after[0] != ':' {
			return nil, nil, false
		}
		after = after[1:]
	default:
		if !plainStart(text) {
			return nil, nil, false
		}
		c := colonSpace(text)
		if c <= 0 || c > maxKey || text[c-1] == ' ' || bytes.Contains(text[:c], []byte(" #")) {
			return nil, nil, false // no key, a space before the colon, a comment before it
		}
		k := text[:c]
		if string(k) == "<<" {
			return nil, nil, false
		}
		if _, str := resolvePlain(k); !str {
			return nil, nil, false
		}
		key, after = k, text[c+1:]
	}
	if len(after) > 0 && after[0] != ' ' {
		return nil, nil, false
	}
	return key, bytes.TrimLeft(after, " "), true
}

// maxKey bounds the spelling of a key: YAML allows an implicit key of up to 1024 characters
// (libyaml counts them its own way), and no manifest needs one so long.
const maxKey = 512

// colonSpace is the index of the first `:` followed by a space or the end of text, or -1.
func colonSpace(text []byte) int {
	for i, c := range text {
		if c == ':' && (i+1 == len(text) || text[i+1] == ' ') {
			return i
		}
	}
	return -1
}

// plainStart reports whether a plain scalar may start text in block context: not with an
// indicator (YAML 1.1 section 9.1.3), and `-`, `?`, `:` only before a non-space.
func plainStart(text []byte) bool {
	switch text[0] {
	case '[', ']', '{', '}', ',', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '-', '?', ':':
		return len(text) > 1 && text[1] != ' '
	}
	return true
}

// inlineScalar is the value written on a key's or dash's line: a quoted or plain scalar, or a
// flow of scalars, with an optional comment after it.
func inlineScalar(text []byte) (blockValue, bool) {
	switch text[0] {
	case '\'', '"':
		s, n, ok := quoted(text)
		if !ok || !onlyComment(text[n:]) {
			return blockValue{}, false
		}
		return blockValue{kind: 'q', text: s}, true
	case '{', '[':
		v, n, ok := flow(text)
		if !ok || !onlyComment(text[n:]) {
			return blockValue{}, false
		}
		return v, true
	}
	if !plainStart(text) {
		return blockValue{}, false
	}
	if h := bytes.Index(text, []byte(" #")); h >= 0 {
		text = text[:h]
	}
	text = bytes.TrimRight(text, " ")
	if colonSpace(text) >= 0 {
		return blockValue{}, false // `a: b: c`, or a key where a value belongs
	}
	v, str := resolvePlain(text)
	if str {
		return blockValue{kind: 'q', text: text}, true
	}
	return v, v.kind != 0
}

// flow reads the flow mapping or sequence that starts text and ends on its line, of scalars
// only: `{app: a, version: v1}`, `["*"]`, `[]`; n is the length of its spelling. A plain scalar
// in it may not hold `:`, `#` or `?` (yaml.v2 ends a plain scalar at `?` in a flow).
func flow(text []byte) (v blockValue, n int, ok bool) {
	open, end := text[0], text[0]+2
	v.kind = 's'
	if open == '{' {
		v.kind = 'm'
	}
	i := skipSpaces(text, 1)
	if i < len(text) && text[i] == end {
		return v, i + 1, true
	}
	for i < len(text) {
		if open == '{' {
			key, after, ok := flowScalar(text, i, true)
			if !ok || after+1 >= len(text) || text[after] != ':' || text[after+1] != ' ' || after-i > maxKey {
				return blockValue{}, 0, false
			}
			if _, str := resolvePlainOrQuoted(text[i], key); !str {
				return blockValue{}, 0, false
			}
			v.keys = append(v.keys, key)
			i = skipSpaces(text, after+1)
		}
		val, after, ok := flowScalar(text, i, false)
		if !ok {
			return blockValue{}, 0, false
		}
		switch r, str := resolvePlainOrQuoted(text[i], val); {
		case str:
			v.vals = append(v.vals, blockValue{kind: 'q', text: val})
		case r.kind != 0:
			v.vals = append(v.vals, r)
		default:
			return blockValue{}, 0, false
		}
		i = skipSpaces(text, after)
		switch {
		case i < len(text) && text[i] == end:
			return v, i + 1, true
		case i < len(text) && text[i] == ',':
			i = skipSpaces(text, i+1)
		default:
			return blockValue{}, 0, false
		}
	}
	return blockValue{}, 0, false
}

// flowScalar reads the quoted or plain scalar at text[i:] in a flow collection, up to a `,`, a
// closing bracket, or (key) a `:`; after is where it ends. The scalar may not be empty, nor a
// collection.
func flowScalar(text []byte, i int, key bool) (s []byte, after int, ok bool) {
	if i >= len(text) {
		return nil, 0, false
	}
	switch text[i] {
	case '\'', '"':
		s, n, ok := quoted(text[i:])
		return s, i + n, ok
	case '[', ']', '{', '}', ',', '#', '&', '*', '!', '|', '>', '%', '@', '`', '-', '?', ':':
		return nil, 0, false
	}
	j := i
	for j < len(text) && text[j] != ',' && text[j] != ']' && text[j] != '}' && !(key && text[j] == ':') {
		if text[j] == ':' || text[j] == '#' || text[j] == '[' || text[j] == '{' || text[j] == '?' {
			return nil, 0, false
		}
		j++
	}
	s = bytes.TrimRight(text[i:j], " ")
	return s, j, len(s) > 0
}

// resolvePlainOrQuoted is resolvePlain for a scalar spelled starting with first, and a string
// when it was quoted.
func resolvePlainOrQuoted(first byte, s []byte) (blockValue, bool) {
	if first == '\'' || first == '"' {
		return blockValue{}, true
	}
	return resolvePlain(s)
}

// skipSpaces is the index of the first byte at or after i in text that is not a space.
func skipSpaces(text []byte, i int) int {
	for i < len(text) && text[i] == ' ' {
		i++
	}
	return i
}

// onlyComment reports whether text, after a scalar, holds nothing but spaces and a comment
// (which must follow a space).
func onlyComment(text []byte) bool {
	t := bytes.TrimLeft(text, " ")
	return len(t) == 0 || (t[0] == '#' && len(t) < len(text))
}

// quoted reads the quoted scalar that starts text and ends on its line; n is the length of its
// spelling. Double quotes are read only without escapes.
func quoted(text []byte) (s []byte, n int, ok bool) {
	q := text[0]
	for i := 1; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\\' && q == '"':
			return nil, 0, false
		case c == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
			// An escaped quote: the string is the spelling with each pair made one.
			return unquoteSingle(text)
		case c == q:
			return text[1:i], i + 1, true
		}
	}
	return nil, 0, false
}

// unquoteSingle is quoted for a single-quoted scalar where a quote is escaped by doubling it.
func unquoteSingle(text []byte) (s []byte, n int, ok bool) {
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			s = append(s, text[i])
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			s = append(s, '\'')
			i++
			continue
		}
		return s, i + 1, true
	}
	return nil, 0, false
}

// yamlStyleFloat is yaml.v2's (resolve.go).
var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// resolvePlain resolves a plain scalar as YAML 1.1 (yaml.v2's resolve) does: str when it is a
// string; else v is the JSON of the boolean, null or integer it is, or has kind 0 for a float,
// a timestamp or a binary integer, which this converter leaves to yaml.v2.
func resolvePlain(b []byte) (v blockValue, str bool) {
	if len(b) == 0 {
		return jsonNull, false
	}
	switch b[0] {
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		switch string(b) {
		case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
			return jsonTrue, false
		case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
			return jsonFalse, false
		case "~", "null", "Null", "NULL":
			return jsonNull, false
		}
		return blockValue{}, true
	case '.':
		s := string(b)
		if _, err := strconv.ParseFloat(s, 64); err == nil || strings.EqualFold(s, ".nan") || strings.EqualFold(s, ".inf") {
			return blockValue{}, false
		}
		return blockValue{}, true
	case '+', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if decimal(b) {
			return blockValue{kind: 'j', text: b}, false
		}
		s := string(b)
		if looksLikeTimestamp(s) {
			return blockValue{}, false
		}
		plain := strings.ReplaceAll(s, "_", "")
		if n, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return blockValue{kind: 'j', text: strconv.AppendInt(nil, n, 10)}, false
		}
		if n, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return blockValue{kind: 'j', text: strconv.AppendUint(nil, n, 10)}, false
		}
		if yamlStyleFloat.MatchString(plain) || strings.HasPrefix(plain, "0b") || strings.HasPrefix(plain, "-0b") ||
			strings.HasSuffix(s, ".inf") || strings.HasSuffix(s, ".Inf") || strings.HasSuffix(s, ".INF") {
			return blockValue{}, false
		}
		return blockValue{}, true
	}
	return blockValue{}, true
}

// decimal reports whether b is an integer that JSON spells as YAML does: digits without a
// leading zero, short enough for an int64.
func decimal(b []byte) bool {
	if len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// looksLikeTimestamp reports whether s starts as yaml.v2's timestamps do: four digits and `-`.
func looksLikeTimestamp(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i == 4 && i < len(s) && s[i] == '-'
}

// appendJSON writes v as encoding/json writes the value YAMLToJSONStrict builds: object keys
// sorted; ok is false on a repeated key.
func (v *blockValue) appendJSON(out []byte) ([]byte, bool) {
	switch v.kind {
	case 'j':
		return append(out, v.text...), true
	case 'q':
		return appendJSONString(out, v.text), true
	case 's':
		out = append(out, '[')
		for i := range v.vals {
			if i > 0 {
				out = append(out, ',')
			}
			var ok bool
			if out, ok = v.vals[i].appendJSON(out); !ok {
				return nil, false
			}
		}
		return append(out, ']'), true
	}
	var order [16]int
	ord := order[:0]
	for i := range v.keys {
		ord = append(ord, i)
	}
	slices.SortFunc(ord, func(a, b int) int { return bytes.Compare(v.keys[a], v.keys[b]) })
	out = append(out, '{')
	for n, i := range ord {
		if n > 0 {
			if bytes.Equal(v.keys[i], v.keys[ord[n-1]]) {
				return nil, false
			}
			out = append(out, ',')
		}
		out = appendJSONString(out, v.keys[i])
		out = append(out, ':')
		var ok bool
		if out, ok = v.vals[i].appendJSON(out); !ok {
			return nil, false
		}
	}
	return append(out, '}'), true
}

// appendJSONString appends s, printable ASCII and newlines only, as encoding/json quotes it.
func appendJSONString(out, s []byte) []byte {
	out = append(out, '"')
	start := 0
	for i, c := range s {
		var esc string
		switch c {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			continue
		}
		out = append(out, s[start:i]...)
		out = append(out, esc...)
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
