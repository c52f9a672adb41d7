// Package meshhost is how Istio compares host names and selects by labels, in one place for the
// read plan, the index and both engines: the wildcard rules of a host name (host.Name in
// istio.io/istio pkg/config/host/name.go: Matches, SubsetOf, IsWildCarded; MoreSpecific in
// names.go), the expansion of a short name in a namespace (model.ResolveShortnameToFQDN in
// pilot/pkg/model/config.go), the names a host typed on the command line stands for, and the
// label-subset test of a selector (labels.Instance.SubsetOf in pkg/config/labels/instance.go).
//
// It owns: host names and label selection. It may import: the standard library only.
package meshhost
