package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// suggestFor are words that are not near a command's name but mean it: cobra's SuggestFor.
var suggestFor = map[string][]string{
	"cluster": {"cds", "destinationrule", "dr", "envoy"},
	"authz":   {"authorization", "authorizationpolicy", "authorizationpolicies", "rbac", "ztunnel"},
	"version": {"ver"},
}

// addSuggestions sets SuggestFor on the subcommands of root, and the distance within which a
// mistyped name is suggested a command (cobra's default, which only its own argument check
// sets).
func addSuggestions(root *cobra.Command) {
	root.SuggestionsMinimumDistance = 2
	for _, c := range root.Commands() {
		c.SuggestFor = append(c.SuggestFor, suggestFor[c.Name()]...)
	}
}

// unknownCommand is the error for an argument of the root command, which has no arguments:
// an unknown subcommand, with cobra's suggestions (names near it, and SuggestFor).
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, displayName)
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usageErrorf(cmd, "%s", msg)
}

// missingObject matches the subject of a NotFoundError for a pod, deployment or service named
// in a namespace: `pod bookinfo/productpage-v1`.
var missingObject = regexp.MustCompile(`^(pod|deployment|service) ([a-z0-9.-]+)/([a-z0-9.-]+)$`)

// withNamespaceHint wraps the RunE of cmd: a pod, deployment or service that is not in the
// namespace asked for, but is in another, gets `did you mean -n OTHER?` in its error. The other
// namespaces come from the -f files, or from one list of the cluster by name (a failure, a
// refusal or a slow answer adds nothing).
func withNamespaceHint(o *CommonOptions, cmd *cobra.Command) {
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		err := run(c, args)
		var nf *explain.NotFoundError
		if !errors.As(err, &nf) {
			return err
		}
		m := missingObject.FindStringSubmatch(nf.What)
		if m == nil {
			return err
		}
		kind, ns, name := m[1], m[2], m[3]
		others := o.namespacesOf(c.Context(), kind, name)
		others = slices.DeleteFunc(others, func(s string) bool { return s == ns })
		if len(others) == 0 {
			return err
		}
		hint := fmt.Sprintf("did you mean -n %s? %s/%s is in namespace %s", others[0], kind, name, strings.Join(others, ", "))
		if len(others) > 1 {
			hint = fmt.Sprintf("did you mean -n %s? %s/%s is in namespaces %s", others[0], kind, name, strings.Join(others, ", "))
		}
		out := *nf
		out.Hint = strings.TrimPrefix(nf.Hint+"; "+hint, "; ")
		return &out
	}
}

// namespacesOf returns the namespaces, sorted, that hold a pod, deployment or service named
// name: in the -f files, or else in the cluster.
func (o *CommonOptions) namespacesOf(ctx context.Context, kind, name string) []string {
	var objs []objectRef
	if len(o.Filenames) > 0 {
		snap := o.filesSnapshot(ctx, "default")
		if snap == nil {
			return nil
		}
		objs = snapshotObjects(snap, kind)
	} else {
		ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		cs, err := o.lookupClient()
		if err != nil {
			return nil
		}
		opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), Limit: 50}
		objs = listObjects(ctx, cs, kind, "", opts)
	}
	var out []string
	for _, r := range objs {
		if r.name == name {
			out = append(out, r.namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
