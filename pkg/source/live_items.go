package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// readItemPage reads a page of a list as the API server writes it, a JSON object with
// `metadata` and `items`, and returns the page's metadata.continue and the bytes of each element
// of `items`, sub-slices of buf, which holds the body afterwards. It checks the page's structure
// (every object, array and string closed, in order; keys, colons and commas where they belong;
// nothing after the page) and decodes the metadata, but does not decode the items: an item is
// decoded, and so checked in full, only when it is kept. It is what json-iterator's skipping
// would do for each item, without decoding every key on the way.
func readItemPage(r io.Reader, buf *[]byte) (cont string, items []json.RawMessage, err error) {
	data, err := readAllInto((*buf)[:0], r)
	*buf = data
	if err != nil {
		return "", nil, err
	}
	s := &itemScanner{data: data}
	if err := s.page(&cont, &items); err != nil {
		return "", nil, err
	}
	return cont, items, nil
}

// readAllInto appends what r holds, to its end, to data, growing it only when it is full, as
// io.ReadAll does; it returns data as far as it was read, also with an error.
func readAllInto(data []byte, r io.Reader) ([]byte, error) {
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
}

// itemBuffers are the bodies of item pages whose items are decoded: a list's next page is read
// while the previous one is decoded, so two serve a list of any length.
var itemBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// itemScanner walks a JSON document without decoding it.
type itemScanner struct {
	data  []byte
	i     int
	stack []byte
}

var errTruncated = errors.New("unexpected end of JSON input")

func (s *itemScanner) errorf(format string, a ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", s.i, fmt.Sprintf(format, a...))
}

func (s *itemScanner) space() {
	// Every JSON white space byte is at most ' '; compact JSON has none.
	for s.i < len(s.data) && s.data[s.i] <= ' ' {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// expect consumes c after optional white space.
func (s *itemScanner) expect(c byte) error {
	s.space()
	if s.i >= len(s.data) {
		return errTruncated
	}
	if s.data[s.i] != c {
		return s.errorf("want %q, found %q", c, s.data[s.i])
	}
	s.i++
	return nil
}

// page reads the top-level object.
func (s *itemScanner) page(cont *string, items *[]json.RawMessage) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
	} else {
		for {
			s.space()
			start := s.i
			if err := s.str(); err != nil {
				return err
			}
			var key string
			if err := json.Unmarshal(s.data[start:s.i], &key); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			s.space()
			switch key {
			case "items":
				if err := s.items(items); err != nil {
					return err
				}
			case "metadata":
				start := s.i
				if err := s.value(); err != nil {
					return err
				}
				var meta struct {
					Continue string `json:"continue"`
				}
				if err := json.Unmarshal(s.data[start:s.i], &meta); err != nil {
					return err
				}
				*cont = meta.Continue
			default:
				if err := s.value(); err != nil {
					return err
				}
			}
			s.space()
			if s.i >= len(s.data) {
				return errTruncated
			}
			if c := s.data[s.i]; c == '}' {
				s.i++
				break
			} else if c != ',' {
				return s.errorf("want ',' or '}', found %q", c)
			}
			s.i++
		}
	}
	s.space()
	if s.i != len(s.data) {
		return errors.New("more data after the list")
	}
	return nil
}

// items reads the items array (or null) into items.
func (s *itemScanner) items(items *[]json.RawMessage) error {
	if bytes.HasPrefix(s.data[s.i:], []byte("null")) {
		s.i += len("null")
		return nil
	}
	if err := s.expect('['); err != nil {
		return err
	}
	s.space()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		s.space()
		start := s.i
		if err := s.value(); err != nil {
			return err
		}
		*items = append(*items, s.data[start:s.i:s.i])
		s.space()
		if s.i >= len(s.data) {
			return errTruncated
		}
		c := s.data[s.i]
		s.i++
		switch c {
		case ']':
			return nil
		case ',':
		default:
			s.i--
			return s.errorf("want ',' or ']', found %q", c)
		}
	}
}

// str reads a string starting at s.i.
func (s *itemScanner) str() error {
	if s.i >= len(s.data) {
		return errTruncated
	}
	if s.data[s.i] != '"' {
		return s.errorf("want a string, found %q", s.data[s.i])
	}
	// Strings are short: a loop is faster here than a search per quote.
	for j := s.i + 1; j < len(s.data); j++ {
		switch s.data[j] {
		case '"':
			s.i = j + 1
			return nil
		case '\\':
			j++
		}
	}
	return errTruncated
}

// value reads one value starting at s.i: an object or array to its matching close (keys,
// colons and commas checked), a string, or a literal or number (its characters checked).
func (s *itemScanner) value() error {
	if s.i >= len(s.data) {
		return errTruncated
	}
	switch c := s.data[s.i]; c {
	case '"':
		return s.str()
	case '{', '[':
		return s.composite()
	default:
		start := s.i
		for s.i < len(s.data) && isLiteralByte(s.data[s.i]) {
			s.i++
		}
		if s.i == start {
			return s.errorf("unexpected %q", c)
		}
		if s.i >= len(s.data) {
			return errTruncated
		}
		return nil
	}
}

func isLiteralByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// composite reads an object or array and everything in it, without recursion.
func (s *itemScanner) composite() error {
	base := len(s.stack)
	for {
		// A value is due.
		s.space()
		if s.i >= len(s.data) {
			return errTruncated
		}
		if c := s.data[s.i]; c == '{' || c == '[' {
			s.i++
			s.space()
			if s.i < len(s.data) && s.data[s.i] == closer(c) {
				s.i++
			} else {
				s.stack = append(s.stack, c)
				if c == '{' {
					if err := s.key(); err != nil {
						return err
					}
				}
				continue
			}
		} else if err := s.value(); err != nil {
			return err
		}
		// A value is complete.
		if err := s.after(base); err != nil {
			return err
		}
		if len(s.stack) == base {
			return nil
		}
	}
}

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

// key reads an object's key and its colon.
func (s *itemScanner) key() error {
	s.space()
	if err := s.str(); err != nil {
		return err
	}
	return s.expect(':')
}

// after reads what follows a complete value inside the objects and arrays opened above base:
// the closes it completes, until a comma (and in an object the next key) makes a value due,
// or the one at base is closed.
func (s *itemScanner) after(base int) error {
	for len(s.stack) > base {
		s.space()
		if s.i >= len(s.data) {
			return errTruncated
		}
		top := s.stack[len(s.stack)-1]
		switch c := s.data[s.i]; c {
		case ',':
			s.i++
			if top == '{' {
				return s.key()
			}
			return nil
		case closer(top):
			s.i++
			s.stack = s.stack[:len(s.stack)-1]
		default:
			return s.errorf("want ',' or %q, found %q", closer(top), c)
		}
	}
	return nil
}
