package sidecarauthz

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNSIndexKeepsSnapshotOrder: a pod's answer reads the objects of two namespaces in the
// order a scan of the whole snapshot would meet them, whatever order the namespaces come in.
func TestNSIndexKeepsSnapshotOrder(t *testing.T) {
	var all []*corev1.Service
	for _, nn := range [][2]string{{"b", "1"}, {"a", "2"}, {"c", "3"}, {"b", "4"}, {"a", "5"}, {"b", "6"}} {
		all = append(all, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: nn[0], Name: nn[1]}})
	}
	x := newNSIndex(all)
	names := func(ss []*corev1.Service) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range []struct {
		a, b string
		want []string
	}{
		{"a", "b", []string{"1", "2", "4", "5", "6"}},
		{"b", "a", []string{"1", "2", "4", "5", "6"}},
		{"b", "b", []string{"1", "4", "6"}},
		{"c", "none", []string{"3"}},
		{"none", "none", nil},
	} {
		if got := names(x.in(tc.a, tc.b)); !slices.Equal(got, tc.want) {
			t.Errorf("in(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
