package render

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Safe returns s as a terminal may show it: every character that a terminal would act on
// instead of print is spelled out, so that a value read from the input (an object name, a
// subset, a principal) can neither move the cursor, change colours, set the window title
// (ESC and OSC sequences) nor reorder what follows it (bidirectional overrides). C0 controls
// but the newline and the tab, DEL and bytes that are not UTF-8 become `\xNN` (carriage
// return: `\r`); C1 controls and the bidirectional formatting characters (U+061C, U+200E,
// U+200F, U+202A to U+202E, U+2066 to U+2069) become `\uNNNN`. Newlines and tabs are kept:
// tables and messages are laid out with them. The table printers and the command's messages
// on stderr pass every text through Safe; json, yaml, envoy and ztunnel output is data and
// stays exact.
func Safe(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafeRune(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether Safe spells r out; size 1 with utf8.RuneError is a byte that is
// not UTF-8.
func unsafeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n', r == '\t':
		return false
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
