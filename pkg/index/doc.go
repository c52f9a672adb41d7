// Package index is the lookup layer over a model.Snapshot for the cluster engine: services by
// host (Kubernetes Services and ServiceEntries, with ports, resolution and endpoints), the
// client proxy, the services in a proxy's scope, DestinationRule selection and merging exactly as
// istiod's PushContext does it, and VirtualService subset references.
//
// It owns: the registry view (Service, Port, Endpoint), Proxy, ConsolidatedRule, Selection.
// It may import: model, explain, provenance, istio.io/api and client-go types, k8s.io/api types.
// It must not import cli, render, source, engines, cobra, lipgloss or client-go clients.
// The rules it follows: docs/semantics/cluster.md (services in scope, which DestinationRule
// applies, diagnostics), from istio.io/istio pilot/pkg/model, whose code wins on conflicts.
//
// The Istio functions this package reproduces, and where they live in istio/istio:
//   - registry: pilot/pkg/serviceregistry/kube/conversion.go (ConvertService),
//     pilot/pkg/serviceregistry/serviceentry/conversion.go (convertServices,
//     convertServiceEntryToInstances), pkg/config/kube/conversion.go (ConvertProtocol),
//     push_context.go initServiceRegistry and addServiceAccounts;
//   - scope: push_context.go doGetSidecarScope, IsServiceVisible, serviceExportTo and
//     sidecar.go convertIstioListenerToWrapper, selectServices, collectImportedServices,
//     appendSidecarServices, pickBestVisibleNamespace;
//   - DestinationRules: push_context.go setDestinationRules, destinationRule,
//     getExportedDestinationRuleFromNamespace, destination_rule.go mergeDestinationRule and
//     sidecar.go SidecarScope.DestinationRule;
//   - mTLS: push_context.go BestEffortInferServiceMTLSMode, authentication.go
//     addPeerAuthentication, pilot/pkg/security/authn/policy_applier.go ComposePeerAuthentication;
//   - routes: virtualservice.go ResolveVirtualServiceShortnames and SelectVirtualServices.
package index
