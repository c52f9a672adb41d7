package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"
)

// FileCache keeps what Load reads of files across loads: each file is read and split once, each
// YAML document is scanned once, converted to JSON at most once (when a load keeps it), and its
// position tree is built at most once (when a position inside it is asked for). A command that
// loads the same files more than once (a corrected plan, the Nodes) passes one FileCache in every
// Spec, and every load then sees the files as the first one read them. Standard input is not
// cached. A FileCache is safe for concurrent use.
type FileCache struct {
	mu    sync.Mutex
	files map[string]*cachedFile
}

// NewFileCache returns an empty FileCache.
func NewFileCache() *FileCache {
	return &FileCache{files: map[string]*cachedFile{}}
}

// file returns the entry of path, created on first use.
func (c *FileCache) file(path string) *cachedFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.files[path]
	if !ok {
		f = &cachedFile{path: path}
		c.files[path] = f
	}
	return f
}

// cachedFile is one file as read: its bytes and, for YAML, its documents.
type cachedFile struct {
	path string

	// given is set for bytes that are not read from path (standard input).
	given    bool
	readOnce sync.Once
	data     []byte
	err      error
	// isJSON is set for a JSON stream (the file starts with `{`); docs is nil then.
	isJSON bool
	docs   []*yamlDoc
}

// givenFile is a file whose bytes are given (standard input).
func givenFile(name string, data []byte) *cachedFile {
	return &cachedFile{path: name, given: true, data: data}
}

// read reads and splits the file, once; a file over limit bytes is not read.
func (f *cachedFile) read(limit int64) error {
	f.readOnce.Do(func() {
		if !f.given {
			f.data, f.err = ReadInput(f.path, limit)
			if f.err != nil {
				return
			}
		}
		f.data = bytes.TrimPrefix(f.data, []byte("\xef\xbb\xbf"))
		if t := bytes.TrimLeft(f.data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
			f.isJSON = true
			return
		}
		for _, ch := range splitYAML(f.data) {
			d := &yamlDoc{yamlChunk: ch}
			if ch.badSeparator == "" && len(bytes.TrimSpace(ch.text)) > 0 {
				d.sc, d.scanOK = scanHeader(ch.text)
				d.tree = &lazyTree{text: ch.text, line: ch.startLine, col: 1}
			}
			f.docs = append(f.docs, d)
		}
	})
	return f.err
}

// yamlDoc is one YAML document of a file: where it is, what its scan found, and its JSON once
// converted.
type yamlDoc struct {
	yamlChunk
	sc     scanned
	scanOK bool

	jsOnce sync.Once
	js     []byte
	jsErr  error

	// tree is the document's position tree, nil for an empty document or a bad separator.
	tree *lazyTree
}

// json converts the document as sigs.k8s.io/yaml does (YAML 1.1, what kubectl sends to the API
// server), once: by blockToJSON when it can, else by sigs.k8s.io/yaml itself.
func (d *yamlDoc) json() ([]byte, error) {
	d.jsOnce.Do(func() {
		if js, ok := blockToJSON(d.text); ok {
			d.js = js
			return
		}
		d.js, d.jsErr = sigsyaml.YAMLToJSONStrict(d.text)
	})
	return d.js, d.jsErr
}

// lazyTree is the yaml.v3 node tree of a document, parsed on first use for field positions.
type lazyTree struct {
	text      []byte
	line, col int

	once sync.Once
	node *yaml.Node
}

// root returns the document's root node, positioned in its file; nil when yaml.v3 cannot parse
// the document.
func (t *lazyTree) root() *yaml.Node {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		var n yaml.Node
		if yaml.Unmarshal(t.text, &n) == nil {
			t.node = resolve(&n)
			shiftNodes(t.node, t.line, t.col)
		}
	})
	return t.node
}

// scanDocuments enables dropping documents by their scanned header; tests turn it off to
// compare with loading every document in full.
var scanDocuments = true

// input is one file of a load, in the order kubectl visits them.
type input struct {
	// name is the file as positions spell it.
	name string
	f    *cachedFile
	// err is a failure found while listing the inputs; the load stops there.
	err error
	// skipped, when set, is why the path is not read (a named pipe, a dangling link).
	skipped string
	// panicked, when set, is the issue of a panic while the file was prepared.
	panicked string
	// found is set for a file found in a directory (not named with -f).
	found bool
	// skip marks the documents this load drops unparsed (see loader.skips).
	skip []bool
	// pre holds the objects decoded ahead of loading, by document.
	pre []*decoded
}

// decoded is an object decoded ahead of loadDocument, with the kind it was decoded as.
type decoded struct {
	// h is the header the object was decoded under, which loadDocument takes rather than
	// decoding the JSON again.
	h        header
	ki       *kindInfo
	o        object
	problems []fieldError
}

// prepare reads the inputs and converts the YAML documents the load keeps, concurrently.
func (l *loader) prepare(ins []*input) {
	work := make(chan *input)
	var wg sync.WaitGroup
	n := min(runtime.GOMAXPROCS(0), len(ins))
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range work {
				l.prepareSafely(in)
			}
		}()
	}
	for _, in := range ins {
		if in.err == nil && in.skipped == "" {
			work <- in
		}
	}
	close(work)
	wg.Wait()
}

// prepareSafely is prepareOne on a worker goroutine, where a panic would end the process: it
// is recovered and kept in the input, which then loads as an issue naming the file.
func (l *loader) prepareSafely(in *input) {
	defer func() {
		if r := recover(); r != nil {
			in.panicked = fmt.Sprintf("cannot read this file: internal error: %v; it is skipped", r)
		}
	}()
	l.prepareOne(in)
}

// testHookPrepare, when set, is called with each input's name as it is prepared; tests use it
// to make a worker panic.
var testHookPrepare func(name string)

func (l *loader) prepareOne(in *input) {
	if testHookPrepare != nil {
		testHookPrepare(in.name)
	}
	if in.f.read(l.spec.maxInputBytes()) != nil || in.f.isJSON {
		return
	}
	in.skip = make([]bool, len(in.f.docs))
	in.pre = make([]*decoded, len(in.f.docs))
	for i, d := range in.f.docs {
		if d.tree == nil {
			continue
		}
		if scanDocuments && d.scanOK && l.skips(d.sc.h, d.text) {
			in.skip[i] = true
			continue
		}
		if js, err := d.json(); err == nil {
			var scanned *header
			if d.scanOK {
				scanned = &d.sc.h
			}
			in.pre[i] = l.predecode(js, scanned)
		}
	}
}

// predecode decodes the object of a document as loadDocument would, when it is a single object
// that the load keeps; nil otherwise, and when a decoder panics (loadDocument then decodes it
// again and reports the panic). scanned, when not nil, is the document's header as scanHeader
// read it, which is the header the JSON holds (FuzzScanHeader), so the JSON is not decoded
// twice to find it.
func (l *loader) predecode(js []byte, scanned *header) (out *decoded) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	js = bytes.TrimSpace(js)
	if len(js) == 0 || js[0] != '{' {
		return nil
	}
	var h header
	if scanned != nil {
		h = *scanned
	} else {
		_ = json.Unmarshal(js, &h)
	}
	if h.Kind == "" || h.APIVersion == "" || h.Metadata.Name == "" || strings.HasSuffix(h.Kind, "List") {
		return nil
	}
	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil {
		return nil
	}
	ki := kindByGroupKind(gv.Group, h.Kind)
	if ki == nil || !ki.serves(gv.Version) {
		return nil
	}
	ns := l.objectNamespace(ki, h.Metadata.Namespace)
	if l.spec.FilterFiles && !l.planned(ki, ns, h.Metadata.Name) {
		return nil
	}
	o, problems := ki.decode(js)
	return &decoded{h: h, ki: ki, o: o, problems: problems}
}
