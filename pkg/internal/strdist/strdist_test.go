package strdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"reviews", "reviews", 0},
		{"reviews", "review", 1},
		{"maxConection", "maxConnections", 2},
		{"kitten", "sitting", 3},
		{"", "abc", 3},
	} {
		if got := Levenshtein(c.a, c.b); got != c.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
