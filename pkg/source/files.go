package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/strdist"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// stdinName is how positions spell standard input.
const stdinName = "<stdin>"

// fileExtensions are the files a directory contributes (kubectl's FileExtensions).
var fileExtensions = []string{".json", ".yaml", ".yml"}

// readFiles loads every -f argument in order, as kubectl's resource builder visits them: a file
// named explicitly is read whatever its extension; a directory contributes its .json, .yaml and
// .yml files in lexical order, its subdirectories only with -R. Later objects replace earlier
// ones with the same kind, namespace and name. The files are read and parsed concurrently, then
// loaded in that order.
func (l *loader) readFiles() error {
	cache := l.spec.Cache
	if cache == nil {
		cache = NewFileCache()
	}
	ins := l.listInputs(cache)
	l.prepare(ins)
	for _, in := range ins {
		switch {
		case in.err != nil:
			return in.err
		case in.skipped != "" || in.panicked != "":
			l.issue(model.LoadIssue{Severity: "error", Position: &provenance.Position{File: in.name}, Message: in.skipped + in.panicked})
			continue
		case in.f.err != nil:
			var tl *tooLargeError
			if in.found && !errors.As(in.f.err, &tl) {
				// One unreadable file of a directory costs that file, not the others.
				l.issue(model.LoadIssue{Severity: "error", Position: &provenance.Position{File: in.name}, Message: fmt.Sprintf("cannot read this file (%s); it is skipped", describePathError(in.f.err))})
				continue
			}
			return fmt.Errorf("reading %s: %w", in.f.path, in.f.err)
		}
		l.loadInputSafely(in)
	}
	return nil
}

// loadInputSafely is loadInput with a panic outside an object's decoding (loadDocument
// recovers those) turned into an issue naming the file: the objects it loaded before stay.
func (l *loader) loadInputSafely(in *input) {
	defer func() {
		if r := recover(); r != nil {
			l.issue(model.LoadIssue{Severity: "error", Position: &provenance.Position{File: in.name}, Message: fmt.Sprintf("cannot read the rest of this file: internal error: %v", r)})
		}
	}()
	l.loadInput(in)
}

// DefaultMaxInputBytes is the default limit on the size of any single input (a file, standard
// input, the --meshconfig file): 256 MiB, far above any real mesh's manifests, and read in a
// fraction of a second.
const DefaultMaxInputBytes = 256 << 20

// maxInputBytes is the limit on any single input of the load.
func (s Spec) maxInputBytes() int64 {
	if s.MaxInputBytes > 0 {
		return s.MaxInputBytes
	}
	return DefaultMaxInputBytes
}

// tooLargeError is an input over the size limit.
type tooLargeError struct {
	size  int64 // -1 when unknown (read up to the limit)
	limit int64
}

func (e *tooLargeError) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("the file has more than the input limit of %d bytes (--max-input-bytes)", e.limit)
	}
	return fmt.Sprintf("the file has %d bytes, more than the input limit of %d bytes (--max-input-bytes)", e.size, e.limit)
}

// ReadInput reads one input file (the --meshconfig file, a file named with -f) within limit
// bytes (0: DefaultMaxInputBytes). Only a regular file is read: a named pipe or a device could
// block forever or never end.
func ReadInput(path string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxInputBytes
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fileType(info.Mode()))
	}
	if info.Size() > limit {
		return nil, &tooLargeError{size: info.Size(), limit: limit}
	}
	// Sized from the stat, as os.ReadFile is: io.ReadAll's growing buffer holds up to two and
	// a half times a large file while it reads.
	data, err := readAllInto(make([]byte, 0, info.Size()+512), io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &tooLargeError{size: -1, limit: limit}
	}
	return data, nil
}

// ReadStdin reads standard input within limit bytes (0: DefaultMaxInputBytes); more fails
// as soon as the limit is passed. It reads in chunks and joins them only at the end, so that
// an endless input costs the limit in memory, not the twice or more of a growing buffer.
func ReadStdin(r io.Reader, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxInputBytes
	}
	const chunk = 1 << 20
	var chunks [][]byte
	var total int64
	for {
		buf := make([]byte, min(chunk, limit+1-total))
		n, err := io.ReadFull(r, buf)
		total += int64(n)
		if n > 0 {
			chunks = append(chunks, buf[:n])
		}
		if total > limit {
			return nil, fmt.Errorf("standard input is larger than the input limit of %d bytes (--max-input-bytes)", limit)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
	}
	if len(chunks) == 1 {
		// A small input is copied out of its chunk, so that what keeps it keeps its size
		// rather than the chunk's megabyte.
		if c := chunks[0]; cap(c)-len(c) > len(c) {
			return bytes.Clone(c), nil
		}
		return chunks[0], nil
	}
	return bytes.Join(chunks, nil), nil
}

// fileType names a file mode that is neither a regular file nor a directory.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}

// describePathError says why a path could not be read, without Go's "open PATH:" prefix (the
// path is in the message's position).
func describePathError(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "a symbolic link to a path that does not exist"
	case errors.Is(err, syscall.ELOOP):
		return "a symbolic link loop"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// notRegular is the message of a path that is skipped for its type.
func notRegular(m fs.FileMode) string {
	return fmt.Sprintf("not a regular file (%s); it is skipped (pass its content with -f - to read it)", fileType(m))
}

// listInputs lists the files of the -f arguments in order. A failure (a path that does not
// exist, an unreadable directory) ends the list with an input that holds it, so that it is
// reported after the failures of the files before it, as when reading them in turn. Only
// regular files and directories are read: a named pipe, a socket or a device (named with -f
// or found in a directory) is skipped with an issue, and so is a file of a directory that
// cannot be read (a dangling symbolic link, a loop of them) or a subdirectory that cannot be
// listed.
func (l *loader) listInputs(cache *FileCache) []*input {
	var ins []*input
	stop := func(err error) []*input { return append(ins, &input{err: err}) }
	skip := func(p, msg string) { ins = append(ins, &input{name: l.displayPath(p), skipped: msg}) }
	for _, f := range l.spec.Files {
		if f == "-" {
			if l.spec.Stdin == nil {
				return stop(errors.New("-f - reads standard input, but none is available"))
			}
			data, err := ReadStdin(l.spec.Stdin, l.spec.maxInputBytes())
			if err != nil {
				return stop(err)
			}
			ins = append(ins, &input{name: stdinName, f: givenFile(stdinName, data)})
			continue
		}
		info, err := os.Stat(f)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return stop(fmt.Errorf("the path %q does not exist", f))
			}
			return stop(fmt.Errorf("reading %s: %w", f, err))
		}
		if !info.IsDir() {
			if !info.Mode().IsRegular() {
				skip(f, notRegular(info.Mode()))
				continue
			}
			ins = append(ins, &input{name: l.displayPath(f), f: cache.file(f)})
			continue
		}
		err = filepath.WalkDir(f, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == f {
					return fmt.Errorf("reading %s: %w", p, err)
				}
				skip(p, fmt.Sprintf("cannot read this directory (%s); it is skipped", describePathError(err)))
				if d != nil && d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if p != f && !l.spec.Recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if !wantedFile(d.Name()) {
				return nil
			}
			mode := d.Type()
			if mode&fs.ModeSymlink != 0 {
				target, err := os.Stat(p)
				if err != nil {
					skip(p, fmt.Sprintf("cannot read this file (%s); it is skipped", describePathError(err)))
					return nil
				}
				if target.IsDir() {
					return nil // a directory behind a link is not walked, whatever its name
				}
				mode = target.Mode()
			}
			if !mode.IsRegular() {
				skip(p, notRegular(mode))
				return nil
			}
			ins = append(ins, &input{name: l.displayPath(p), f: cache.file(p), found: true})
			return nil
		})
		if err != nil {
			return stop(err)
		}
	}
	return ins
}

// wantedFile says whether a file found in a directory is loaded: YAML or JSON, but not the
// expected outputs (`want.*`) of a scenario folder.
func wantedFile(name string) bool {
	if strings.HasPrefix(name, "want.") {
		return false
	}
	ext := filepath.Ext(name)
	for _, e := range fileExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

// loadBytes loads the bytes of one file.
func (l *loader) loadBytes(file string, data []byte) {
	in := &input{name: file, f: givenFile(file, data)}
	l.prepareOne(in)
	l.loadInput(in)
}

// loadInput loads one prepared file: a JSON stream when it starts with `{`, YAML documents
// otherwise (k8s.io/apimachinery's YAMLOrJSONDecoder makes the same choice).
func (l *loader) loadInput(in *input) {
	if in.f.isJSON {
		l.loadJSON(in.name, in.f.data)
		return
	}
	l.loadYAML(in)
}

// loadJSON loads a JSON stream. A syntax error costs the object it is in: the decoding starts
// again at the next line that opens an object (`{` in the first column, as every JSON printer
// of a stream writes them), and the issue names the broken object when its header can be read.
func (l *loader) loadJSON(file string, data []byte) {
	base := int64(0)
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := base + dec.InputOffset()
		for start < int64(len(data)) && isJSONSpace(data[start]) {
			start++
		}
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			off := base + dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = base + se.Offset
			}
			line, col := lineCol(data, off)
			next := int64(-1)
			if i := bytes.Index(data[min(start+1, int64(len(data))):], []byte("\n{")); i >= 0 {
				next = start + 1 + int64(i) + 1
			}
			broken := data[start:]
			if next >= 0 {
				broken = data[start:next]
			}
			l.syntaxIssue(file, &provenance.Position{File: file, Line: line, Col: col}, guessJSONHeader(broken), fmt.Sprintf("invalid JSON: %v", err))
			if next < 0 {
				return
			}
			base = next
			dec = json.NewDecoder(bytes.NewReader(data[next:]))
			continue
		}
		if scanDocuments && l.skipsJSON(raw) {
			continue
		}
		end := base + dec.InputOffset()
		line, col := lineCol(data, end-int64(len(raw)))
		pos := provenance.Position{File: file, Line: line, Col: col}
		tree := &lazyTree{text: raw, line: line, col: col}
		l.loadDocument(document{file: file, tree: tree, pos: pos}, raw, nil)
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// syntaxIssue reports a document that does not parse, naming its object when the header could
// be read from its text.
func (l *loader) syntaxIssue(file string, pos *provenance.Position, h header, msg string) {
	is := model.LoadIssue{Severity: "error", Position: pos, Message: msg}
	if h.Kind != "" && h.Metadata.Name != "" {
		ns := h.Metadata.Namespace
		if gv, err := schema.ParseGroupVersion(h.APIVersion); err == nil {
			if ki := kindByGroupKind(gv.Group, h.Kind); ki != nil {
				ns = l.objectNamespace(ki, ns)
			}
		}
		if ns == "" && kindByName(h.Kind) == nil {
			ns = l.spec.DefaultNamespace
		}
		is.Resource = &provenance.Ref{Kind: h.Kind, Namespace: ns, Name: h.Metadata.Name}
		is.Message += "; the object is skipped"
	}
	l.issue(is)
}

var (
	jsonKindRE     = regexp.MustCompile(`"kind"\s*:\s*"([^"\\]*)"`)
	jsonAPIRE      = regexp.MustCompile(`"apiVersion"\s*:\s*"([^"\\]*)"`)
	jsonMetadataRE = regexp.MustCompile(`"metadata"\s*:\s*\{([^{}]*)`)
	jsonNameRE     = regexp.MustCompile(`"name"\s*:\s*"([^"\\]*)"`)
	jsonNSRE       = regexp.MustCompile(`"namespace"\s*:\s*"([^"\\]*)"`)
)

// guessJSONHeader reads the header of an object whose JSON does not parse from its text: the
// first kind and apiVersion, the name and namespace of the first metadata.
func guessJSONHeader(text []byte) header {
	var h header
	if m := jsonKindRE.FindSubmatch(text); m != nil {
		h.Kind = string(m[1])
	}
	if m := jsonAPIRE.FindSubmatch(text); m != nil {
		h.APIVersion = string(m[1])
	}
	if m := jsonMetadataRE.FindSubmatch(text); m != nil {
		if n := jsonNameRE.FindSubmatch(m[1]); n != nil {
			h.Metadata.Name = string(n[1])
		}
		if n := jsonNSRE.FindSubmatch(m[1]); n != nil {
			h.Metadata.Namespace = string(n[1])
		}
	}
	return h
}

// guessYAMLHeader reads the header of a YAML document that does not parse from its lines: the
// root keys kind and apiVersion, and name and namespace under metadata (a block, or a flow
// mapping on its line).
func guessYAMLHeader(text []byte) header {
	var h header
	inMeta := false
	scalar := func(v string) string {
		v = strings.TrimSpace(v)
		if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		return strings.Trim(v, `"'`)
	}
	for _, line := range strings.Split(string(text), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] != ' ' {
			inMeta = false
			key, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch key {
			case "kind":
				h.Kind = scalar(val)
			case "apiVersion":
				h.APIVersion = scalar(val)
			case "metadata":
				val = strings.TrimSpace(val)
				if strings.HasPrefix(val, "{") {
					for _, kv := range strings.Split(strings.Trim(val, "{} "), ",") {
						k, v, _ := strings.Cut(kv, ":")
						switch strings.TrimSpace(k) {
						case "name":
							h.Metadata.Name = scalar(v)
						case "namespace":
							h.Metadata.Namespace = scalar(v)
						}
					}
				} else {
					inMeta = true
				}
			}
			continue
		}
		if !inMeta {
			continue
		}
		// Only the first level under metadata: its indentation is that of its first key.
		trimmed := strings.TrimLeft(line, " ")
		key, val, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		switch key {
		case "name":
			if h.Metadata.Name == "" {
				h.Metadata.Name = scalar(val)
			}
		case "namespace":
			if h.Metadata.Namespace == "" {
				h.Metadata.Namespace = scalar(val)
			}
		}
	}
	return h
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// yamlChunk is one YAML document of a file, split the way kubectl splits them.
type yamlChunk struct {
	text      []byte
	startLine int
	// badSeparator is set when the `---` line that opens the chunk has trailing content.
	badSeparator string
	sepLine      int
}

// splitYAML splits a YAML stream on `---` lines, like k8s.io/apimachinery's YAMLReader: a line
// starting with `---` followed by nothing but spaces or a comment separates documents. The
// chunks' texts are slices of data.
func splitYAML(data []byte) []yamlChunk {
	var out []yamlChunk
	cur := yamlChunk{startLine: 1}
	start := 0
	lineNo := 0
	for off := 0; off < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		line := data[off:end]
		lineNo++
		if bytes.HasPrefix(line, []byte("---")) {
			rest := strings.TrimSpace(string(line[3:]))
			cur.text = data[start:off:off]
			out = append(out, cur)
			cur = yamlChunk{startLine: lineNo + 1}
			if rest != "" && rest[0] != '#' {
				cur.badSeparator, cur.sepLine = rest, lineNo
			}
			start = end
		}
		off = end
	}
	cur.text = data[start:len(data):len(data)]
	return append(out, cur)
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

func (l *loader) loadYAML(in *input) {
	file := in.name
	for i, d := range in.f.docs {
		if d.badSeparator != "" {
			l.issue(model.LoadIssue{
				Severity: "error", Position: &provenance.Position{File: file, Line: d.sepLine},
				Message: fmt.Sprintf("invalid YAML document separator: %s (only a comment may follow ---)", d.badSeparator),
			})
			continue
		}
		if d.tree == nil || in.skip[i] {
			continue
		}
		js, err := d.json()
		if err != nil {
			msg := strings.TrimSpace(strings.TrimPrefix(trimYAMLError(err), "unmarshal errors:"))
			line := d.startLine
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				line = d.startLine + n - 1
				msg = msg[len(m[0]):]
			}
			msg = strings.ReplaceAll(msg, "\n", " ")
			h := d.sc.h
			if !d.scanOK {
				h = guessYAMLHeader(d.text)
			}
			l.syntaxIssue(file, &provenance.Position{File: file, Line: line}, h, fmt.Sprintf("invalid YAML: %s", strings.Join(strings.Fields(msg), " ")))
			continue
		}
		// Values come from sigs.k8s.io/yaml (YAML 1.1, what kubectl sends to the API server);
		// positions from yaml.v3 nodes, parsed when a position inside the object is asked for.
		// The object's own position is that of its root mapping, which the scan found when it
		// opens the document; otherwise the nodes are parsed now. When yaml.v3 cannot parse a
		// document that YAML 1.1 accepts, the object still loads, with its document position
		// only.
		pos := provenance.Position{File: file, Line: d.startLine, Col: 1}
		if !d.scanOK || d.sc.line != 1 {
			if root := d.tree.root(); root != nil {
				pos = *nodePos(file, root)
			}
		}
		l.loadDocument(document{file: file, tree: d.tree, pos: pos, pre: in.pre[i]}, js, nil)
	}
}

// document is one object's place in a file.
type document struct {
	file string
	// node is the object's YAML node (an item of a List); otherwise tree holds the document's
	// nodes. Both are nil, or tree's root is, when the object could not be parsed for positions.
	node *yaml.Node
	tree *lazyTree
	pos  provenance.Position
	// pre is the object already decoded from the document, if it was.
	pre *decoded
}

// root returns the object's YAML node, nil when there is none.
func (d document) root() *yaml.Node {
	if d.node != nil {
		return d.node
	}
	return d.tree.root()
}

func (d document) at(path string) *provenance.Position {
	if n := d.root(); n != nil {
		if p := locate(d.file, n, path); p != nil {
			return p
		}
	}
	p := d.pos
	return &p
}

// header is what is read of an object before its kind is known; decoded leniently so that even
// a malformed object can be named.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// loadDocument loads one object, or the items of a List. inherit is the header of the enclosing
// typed list (DestinationRuleList), whose items may omit apiVersion and kind.
func (l *loader) loadDocument(d document, js []byte, inherit *header) {
	defer func() {
		// A decoder bug must cost one object, never the whole load.
		if r := recover(); r != nil {
			l.issue(model.LoadIssue{Severity: "error", Position: &d.pos, Message: fmt.Sprintf("cannot decode this object: %v", r)})
		}
	}()
	js = bytes.TrimSpace(js)
	if len(js) == 0 || isNull(js) {
		return
	}
	if js[0] != '{' {
		l.issue(model.LoadIssue{
			Severity: "error", Position: &d.pos,
			Message: fmt.Sprintf("not a Kubernetes object: expected a mapping with apiVersion and kind, got %s", describeJSON(js)),
		})
		return
	}
	var h header
	if d.pre != nil {
		// The header the document was predecoded under: the JSON's (predecode).
		h = d.pre.h
	} else {
		_ = json.Unmarshal(js, &h) // lenient: a malformed field elsewhere must not hide the name
	}
	if inherit != nil {
		if h.Kind == "" {
			h.Kind = inherit.Kind
		}
		if h.APIVersion == "" {
			h.APIVersion = inherit.APIVersion
		}
	}
	switch {
	case h.Kind == "":
		l.issue(model.LoadIssue{Severity: "error", Position: &d.pos, Field: "kind", Message: "object has no kind; it is skipped"})
		return
	case h.APIVersion == "":
		l.issue(model.LoadIssue{Severity: "error", Position: &d.pos, Field: "apiVersion", Message: fmt.Sprintf("%s has no apiVersion; the object is skipped", h.Kind)})
		return
	}

	if h.Items != nil && (h.Kind == "List" || strings.HasSuffix(h.Kind, "List")) {
		var items *yaml.Node
		if n := d.root(); n != nil {
			_, items = mappingField(n, "items")
			items = resolve(items)
		}
		var elem *header
		if h.Kind != "List" {
			elem = &header{Kind: strings.TrimSuffix(h.Kind, "List"), APIVersion: h.APIVersion}
		}
		for i, item := range h.Items {
			child := document{file: d.file, pos: d.pos}
			if items != nil && items.Kind == yaml.SequenceNode && i < len(items.Content) {
				child.node = resolve(items.Content[i])
				child.pos = *nodePos(d.file, child.node)
			}
			l.loadDocument(child, item, elem)
		}
		return
	}

	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil {
		l.issue(model.LoadIssue{Severity: "error", Position: d.at("apiVersion"), Field: "apiVersion", Message: fmt.Sprintf("%s: invalid apiVersion %q", h.Kind, h.APIVersion)})
		return
	}
	if gv.Group == "" && h.Kind == kindConfigMap {
		l.loadConfigMap(d, js, h, gv)
		return
	}
	ki := kindByGroupKind(gv.Group, h.Kind)
	if ki == nil {
		// Istio's own networking Gateway shares the Gateway API kind's name: not a misspelling.
		if k := kindByName(h.Kind); k != nil && ownGroup(gv.Group) && !(h.Kind == KindGateway && gv.Group == groupNetworking) {
			l.issue(model.LoadIssue{
				Severity: "error", Position: d.at("apiVersion"), Field: "apiVersion",
				Message: fmt.Sprintf("no matches for kind %q in version %q (%s is %s)", h.Kind, h.APIVersion, h.Kind, k.apiVersion()),
			})
		}
		if ownGroup(gv.Group) {
			if hint := kindHint(gv.Group, h.Kind); hint != "" {
				l.issue(model.LoadIssue{
					Severity: "error", Position: d.at("kind"), Field: "kind",
					Message: fmt.Sprintf("unknown kind %q in %s: did you mean %s; the object is skipped", h.Kind, h.APIVersion, hint),
				})
			}
		}
		return // not a kind the engines read
	}
	if !ki.serves(gv.Version) {
		l.issue(model.LoadIssue{
			Severity: "error", Position: d.at("apiVersion"), Field: "apiVersion",
			Message: fmt.Sprintf("no matches for kind %q in version %q (served versions: %s)", h.Kind, h.APIVersion, servedVersions(ki)),
		})
		return
	}
	if h.Metadata.Name == "" {
		var probe struct {
			Metadata json.RawMessage `json:"metadata"`
		}
		if json.Unmarshal(js, &probe) == nil && len(probe.Metadata) > 0 && probe.Metadata[0] != '{' && !isNull(probe.Metadata) {
			l.issue(model.LoadIssue{
				Severity: "error", Position: d.at("metadata"), Field: "metadata",
				Message: fmt.Sprintf("%s metadata must be an object (with name and namespace), got %s; the object is skipped", h.Kind, describeJSON(probe.Metadata)),
			})
			return
		}
		l.issue(model.LoadIssue{Severity: "error", Position: d.at("metadata"), Field: "metadata.name", Message: fmt.Sprintf("%s has no name; the object is skipped", h.Kind)})
		return
	}
	ns := l.objectNamespace(ki, h.Metadata.Namespace)
	if field, msg := invalidName(ki, h.Metadata.Name, ns); msg != "" {
		l.issue(model.LoadIssue{
			Severity: "error", Position: d.at(field), Field: field,
			Message: fmt.Sprintf("%s %q: %s; the API server rejects it, and the object is skipped", h.Kind, h.Metadata.Name, msg),
		})
		return
	}
	if l.spec.FilterFiles && !l.planned(ki, ns, h.Metadata.Name) {
		// A cluster read with the same plan would not return it.
		return
	}
	if keys := l.labelledOnly(ki, ns, h.Metadata.Name); l.spec.FilterFiles && !l.spec.Overlay && keys != nil && !mayHoldLabel(js, keys) {
		// Nor would the labelled read that alone could (skips).
		return
	}
	ref := provenance.Ref{Kind: ki.kind, Namespace: ns, Name: h.Metadata.Name}
	var o object
	var problems []fieldError
	if d.pre != nil && d.pre.ki == ki {
		o, problems = d.pre.o, d.pre.problems
	} else {
		o, problems = ki.decode(js)
	}
	if keys := l.labelledOnly(ki, ns, h.Metadata.Name); l.spec.FilterFiles && keys != nil && o != nil && !hasAnyLabel(o.GetLabels(), keys) {
		// A labelled read would not return it; in overlay mode it still replaces the live
		// object it changes.
		if _, live := l.objs[model.ObjectKey{Kind: ki.kind, Namespace: ns, Name: h.Metadata.Name}]; !live {
			return
		}
	}
	if len(problems) > 0 {
		l.fieldIssues(d, ref, problems)
		return
	}
	if field, msg := rejectedSpec(o); msg != "" {
		l.issue(model.LoadIssue{
			Severity: "error", Resource: &ref, Position: d.at(field), Field: field,
			Message: msg + "; the API server rejects it, and the object is skipped",
		})
		return
	}
	for _, bad := range dropInvalidPodIPs(o) {
		l.issue(model.LoadIssue{
			Severity: "warning", Resource: &ref, Position: d.at(bad.field), Field: bad.field,
			Message: bad.msg + "; the API server rejects it, and the pod is explained without that address",
		})
	}
	o.SetNamespace(ns)
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: ki.group, Version: ki.versions[0], Kind: ki.kind})
	l.addFileObject(d, model.ObjectKey{Kind: ki.kind, Namespace: ns, Name: h.Metadata.Name}, o)
}

// invalidName checks an object's name and namespace as the API server does (apimachinery's
// ValidateObjectMeta with the kind's name rule: a DNS-1035 label for a Service, a DNS-1123
// label for a Namespace, a DNS-1123 subdomain otherwise; the namespace a DNS-1123 label) and
// returns the field at fault and kubectl's words for it, or "" when both are valid. An object
// the API server would not take must not answer for one that a file spells otherwise: istiod
// never sees it.
func invalidName(ki *kindInfo, name, ns string) (field, msg string) {
	var errs []string
	switch ki.kind {
	case KindService:
		errs = validation.IsDNS1035Label(name)
	case KindNamespace:
		errs = validation.IsDNS1123Label(name)
	default:
		errs = validation.IsDNS1123Subdomain(name)
	}
	if len(errs) > 0 {
		return "metadata.name", fmt.Sprintf("invalid name %q: %s", name, strings.Join(errs, "; "))
	}
	if ns == "" {
		return "", ""
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "metadata.namespace", fmt.Sprintf("invalid namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	return "", ""
}

// rejectedSpec checks what the API server validates of the spec fields the engines read, and
// returns the first field at fault and kubectl's words for it, or "" when o passes: a
// Service's ports (numbers 1 to 65535, a `- null` entry being a port 0; names DNS labels) and
// cluster IPs (each an IP address or None; empty means one is to be allocated), a Pod's
// container ports (numbers 1 to 65535, names IANA service names). istiod never sees such an
// object: the engines would build clusters and inbound chains for port 0, resolve a named
// targetPort to port 0, and Istio's ambient index fails on a cluster IP it cannot parse.
func rejectedSpec(o object) (field, msg string) {
	switch o := o.(type) {
	case *corev1.Service:
		for i, p := range o.Spec.Ports {
			if errs := validation.IsValidPortNum(int(p.Port)); len(errs) > 0 {
				return fmt.Sprintf("spec.ports[%d].port", i), fmt.Sprintf("invalid port %d: %s", p.Port, strings.Join(errs, "; "))
			}
			if errs := validation.IsDNS1123Label(p.Name); p.Name != "" && len(errs) > 0 {
				return fmt.Sprintf("spec.ports[%d].name", i), fmt.Sprintf("invalid port name %q: %s", p.Name, strings.Join(errs, "; "))
			}
		}
		if ip := o.Spec.ClusterIP; notAddress(ip) {
			return "spec.clusterIP", fmt.Sprintf("invalid cluster IP %q: must be a valid IP address or None", ip)
		}
		for i, ip := range o.Spec.ClusterIPs {
			if notAddress(ip) {
				return fmt.Sprintf("spec.clusterIPs[%d]", i), fmt.Sprintf("invalid cluster IP %q: must be a valid IP address or None", ip)
			}
		}
	case *corev1.Pod:
		for _, cs := range []struct {
			field string
			list  []corev1.Container
		}{{"spec.initContainers", o.Spec.InitContainers}, {"spec.containers", o.Spec.Containers}} {
			for i, c := range cs.list {
				for j, p := range c.Ports {
					if errs := validation.IsValidPortNum(int(p.ContainerPort)); len(errs) > 0 {
						return fmt.Sprintf("%s[%d].ports[%d].containerPort", cs.field, i, j), fmt.Sprintf("invalid container port %d: %s", p.ContainerPort, strings.Join(errs, "; "))
					}
					if errs := validation.IsValidPortName(p.Name); p.Name != "" && len(errs) > 0 {
						return fmt.Sprintf("%s[%d].ports[%d].name", cs.field, i, j), fmt.Sprintf("invalid port name %q: %s", p.Name, strings.Join(errs, "; "))
					}
				}
			}
		}
	}
	return "", ""
}

// notAddress is true for a Service cluster IP the API server rejects.
func notAddress(ip string) bool {
	return ip != corev1.ClusterIPNone && notIP(ip)
}

// notIP is true for a set IP field that holds no IP address.
func notIP(ip string) bool {
	_, err := netip.ParseAddr(ip)
	return ip != "" && err != nil
}

// fieldProblem is a field of an object and what is wrong with it.
type fieldProblem struct{ field, msg string }

// dropInvalidPodIPs clears the pod IPs of o (a Pod's status.podIP and status.podIPs) that are
// no IP address and says which. The API server refuses such a status from the kubelet, so only
// a file can hold one; the pod is still explained, as a pod whose address is not yet known.
func dropInvalidPodIPs(o object) []fieldProblem {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	var out []fieldProblem
	if ip := pod.Status.PodIP; notIP(ip) {
		out = append(out, fieldProblem{"status.podIP", fmt.Sprintf("Pod IP %q is not a valid IP address", ip)})
		pod.Status.PodIP = ""
	}
	kept := pod.Status.PodIPs[:0]
	for i, p := range pod.Status.PodIPs {
		if notIP(p.IP) {
			out = append(out, fieldProblem{fmt.Sprintf("status.podIPs[%d].ip", i), fmt.Sprintf("Pod IP %q is not a valid IP address", p.IP)})
			continue
		}
		kept = append(kept, p)
	}
	pod.Status.PodIPs = kept
	return out
}

// kindHint is the "did you mean" of an unknown kind in one of the groups the engines read: a
// kind of the group spelled with other cases, or one or two letters away (for names long
// enough that this is no accident). "" when there is none.
func kindHint(group, kind string) string {
	best, bestDist := "", 3
	for _, k := range kindTable {
		if k.group != group {
			continue
		}
		if strings.EqualFold(k.kind, kind) {
			return k.kind + "? (kinds are case-sensitive)"
		}
		if d := strdist.Levenshtein(k.kind, kind); len(kind) >= 6 && d < bestDist {
			best, bestDist = k.kind+"?", d
		}
	}
	return best
}

// ownGroup is true for the API groups whose kinds the engines read.
func ownGroup(g string) bool {
	return g == groupCore || g == groupApps || g == groupNetworking || g == groupSecurity
}

func servedVersions(ki *kindInfo) string {
	vs := make([]string, len(ki.versions))
	for i, v := range ki.versions {
		vs[i] = ki.group + "/" + v
	}
	return strings.Join(vs, ", ")
}

func (l *loader) fieldIssues(d document, ref provenance.Ref, problems []fieldError) {
	for _, p := range problems {
		r := ref
		l.issue(model.LoadIssue{
			Severity: "error", Resource: &r, Position: d.at(p.Path), Field: p.Path,
			Message: p.Message + "; the object is skipped",
		})
	}
}

// hasAnyLabel reports whether labels has one of keys.
func hasAnyLabel(labels map[string]string, keys []string) bool {
	for _, k := range keys {
		if _, ok := labels[k]; ok {
			return true
		}
	}
	return false
}

// addFileObject records an object read from a file; in overlay mode it replaces the live object
// with the same kind, namespace and name.
func (l *loader) addFileObject(d document, key model.ObjectKey, o object) {
	pos := d.pos
	if l.fromFile[key] {
		prev := l.sources[key].Position
		ref := key.Ref()
		msg := "defined more than once; this definition replaces the earlier one"
		if prev != nil {
			msg = fmt.Sprintf("defined more than once; this definition replaces the one at %s", prev)
		}
		l.issue(model.LoadIssue{Severity: "warning", Resource: &ref, Position: &pos, Message: msg})
	}
	l.fromFile[key] = true
	l.objs[key] = o
	l.sources[key] = model.Source{Position: &pos, Overlay: l.spec.Overlay}
	if d.node != nil || d.tree != nil {
		l.loc.objs[key] = located{file: d.file, node: d.node, tree: d.tree}
	} else {
		delete(l.loc.objs, key)
	}
}

// loadConfigMap keeps the mesh ConfigMap (istio or istio-<revision> in the Istio namespace);
// every other ConfigMap is ignored.
func (l *loader) loadConfigMap(d document, js []byte, h header, gv schema.GroupVersion) {
	ns := h.Metadata.Namespace
	if ns == "" {
		ns = l.spec.DefaultNamespace
	}
	if gv.Version != "v1" || h.Metadata.Name != MeshConfigMapName(l.spec.Revision) || ns != l.spec.IstioNamespace {
		return
	}
	ref := provenance.Ref{Kind: kindConfigMap, Namespace: ns, Name: h.Metadata.Name}
	o, problems := decodeKube[corev1.ConfigMap](js)
	if len(problems) > 0 {
		l.fieldIssues(d, ref, problems)
		return
	}
	if l.fileMesh != nil {
		r := ref
		l.issue(model.LoadIssue{
			Severity: "warning", Resource: &r, Position: &d.pos,
			Message: fmt.Sprintf("defined more than once; this definition replaces the one at %s", l.fileMesh.pos),
		})
	}
	cm := o.(*corev1.ConfigMap)
	y, ok := cm.Data[MeshConfigKey]
	pos := d.at("data." + MeshConfigKey)
	l.fileMesh = &meshInput{yaml: y, hasKey: ok, ref: ref, pos: pos}
}

// objectNamespace is the namespace an object of kind ki declared in ns is read into:
// none for a cluster-scoped kind, the default namespace when ns is empty.
func (l *loader) objectNamespace(ki *kindInfo, ns string) string {
	switch {
	case ki.cluster:
		return ""
	case ns == "":
		return l.spec.DefaultNamespace
	}
	return ns
}
