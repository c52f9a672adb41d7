// Package plan owns what a question needs to read, for every command: the kinds and namespaces
// of a `cluster` or `authz` answer, the predicates that let the loader skip what cannot change
// it, and the corrections made once a snapshot shows a guess wrong (the root namespace MeshConfig
// sets, the namespaces of the ServiceEntries that define a host, the Nodes of the pods that
// matter, the Services DestinationRules name near the host, a host or pod not found). It does no I/O of its own: the command hands it a Loader
// (source.Load with the command's flags) and the engine, and gets the snapshot and the answer.
// The benchmark's bare-reads client (hack/meshgen) takes its reads from here too.
//
// It owns: ClusterQuery, Cluster, AuthzQuery, Authz, Loader. It may import: source (for
// source.Read and source.Spec), model, explain, meshhost, index (the host predicates of the
// loader); never cli, render or the engines.
package plan
