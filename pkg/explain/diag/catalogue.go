package diag

import "github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"

// The cluster diagnostics (`kubectl mesh-explain cluster`). D15 and D16 are not used.
const (
	HostMatchesNoService         ID = "D1"
	RuleOffLookupPath            ID = "D2"
	RuleHiddenByExportTo         ID = "D3"
	RuleShadowed                 ID = "D4"
	SelectorRuleShadowsFallback  ID = "D5"
	SelectorRuleIgnored          ID = "D6"
	HostNotInScope               ID = "D7"
	SidecarPortTrimsPorts        ID = "D8"
	SubsetNotRouted              ID = "D9"
	RouteToUndefinedSubset       ID = "D10"
	DuplicateSubsetDropped       ID = "D11"
	MergedTrafficPolicyIgnored   ID = "D12"
	RulesNotMerged               ID = "D13"
	PortLevelDropsBlocks         ID = "D14"
	SubsetSelectsNothing         ID = "D17"
	DNSClusterDropped            ID = "D18"
	TLSConflict                  ID = "D19"
	CredentialNameIgnored        ID = "D20"
	HTTP2SettingsWithoutEffect   ID = "D21"
	H2UpgradeOnNonHTTPPort       ID = "D22"
	ConsistentHashInconsistent   ID = "D23"
	OutlierDetectionSurprise     ID = "D24"
	MeshBaselineShadowed         ID = "D25"
	MeshBaselineLostAtSubsetPort ID = "D26"
	TCPSettingsBelowTopLevel     ID = "D27"
	RuleOnExternalNameAlias      ID = "D28"
	PassthroughOnResolvedService ID = "D29"
	EnvoyFilterPatchesClusters   ID = "D30"
	SelectorRuleDoesNotInherit   ID = "D31"
	TLSOriginationWithoutSNI     ID = "D32"
	RejectedByValidation         ID = "D33"
)

// The ambient authorization diagnostics (`kubectl mesh-explain authz`).
const (
	NotCaptured                    ID = "A01"
	PeerAuthenticationTie          ID = "A02"
	RootSelectorPeerAuthentication ID = "A03"
	DanglingPolicyKey              ID = "A04"
	LosesStrict                    ID = "A05"
	UnreferencedPeerAuthentication ID = "A06"
	HTTPFieldsInAllow              ID = "A07"
	HTTPFieldsInDeny               ID = "A08"
	ValueDroppedSilently           ID = "A09"
	UnsupportedAction              ID = "A10"
	DryRun                         ID = "A11"
	EmptySelector                  ID = "A12"
	ServicePortInPortLevelMtls     ID = "A13"
	MalformedPrincipal             ID = "A14"
	PodWithoutLabels               ID = "A15"
	DisableIsPermissive            ID = "A16"
	InvalidRule                    ID = "A17"
	LoadIssue                      ID = "A18"
	AllowNothing                   ID = "A19"
	RuleNeverMatches               ID = "A20"
	DataplaneModeAnnotation        ID = "A21"
	OtherRevision                  ID = "A22"
	ExemptionStillStrict           ID = "A23"
	ParentPeerAuthenticationTie    ID = "A24"
	PolicyRejectedByValidation     ID = "A25"
)

// The sidecar authorization diagnostics (`kubectl mesh-explain authz` on a pod with a sidecar).
const (
	SidecarHTTPFieldsWidenOnTCP           ID = "S01"
	SidecarAllowDroppedOnTCP              ID = "S02"
	SidecarIdentityOnPlaintext            ID = "S03"
	SidecarCustomProviderUnusable         ID = "S04"
	SidecarHTTPProviderOnTCP              ID = "S05"
	SidecarDryRunAllow                    ID = "S06"
	SidecarServicePortInPortLevelMtls     ID = "S07"
	SidecarPortLevelWithoutService        ID = "S08"
	SidecarRootSelectorPeerAuthentication ID = "S09"
	SidecarTargetRefIgnored               ID = "S10"
	SidecarBadValue                       ID = "S11"
	SidecarInvalidRule                    ID = "S12"
	SidecarChainOrderFromMap              ID = "S13"
	SidecarLoadIssue                      ID = "S14"
	SidecarInboundPortConflict            ID = "S15"
	SidecarNoRequestAuthentication        ID = "S16"
	SidecarPrincipalMatchedLiterally      ID = "S17"
	SidecarRejectedByValidation           ID = "S18"
)

// The waypoint authorization diagnostics (`kubectl mesh-explain authz waypoint/NAME`).
const (
	WaypointSelectorPolicyIgnored   ID = "W01"
	WaypointTargetNotBound          ID = "W02"
	WaypointTargetRefMissing        ID = "W03"
	WaypointGatewayClassOutsideRoot ID = "W04"
	WaypointNotDeployed             ID = "W05"
	WaypointHTTPFieldsOnTCP         ID = "W06"
	WaypointCustomProviderUnusable  ID = "W07"
	WaypointBindingRefused          ID = "W08"
	WaypointIdentityRejected        ID = "W09"
	WaypointBypassedByPlaintext     ID = "W10"
	WaypointServesNothing           ID = "W11"
)

const (
	sevError   = explain.SeverityError
	sevWarning = explain.SeverityWarning
	sevInfo    = explain.SeverityInfo
)

// Catalogue is every diagnostic, in ID order (docs/diagnostics.md lists them in this order).
var Catalogue = []Entry{
	{ID: HostMatchesNoService, Severity: sevError, Title: "DestinationRule host matches no service",
		Fix: "set spec.host to the full hostname of the Service or ServiceEntry"},
	{ID: RuleOffLookupPath, Severity: sevError, Title: "DestinationRule never on the lookup path",
		Fix: "move the rule to the service namespace (exported to the client) or to the root namespace"},
	{ID: RuleHiddenByExportTo, Severity: sevError, Title: "DestinationRule hidden by exportTo",
		Fix: "add the client namespace (or . for its own namespace) to spec.exportTo"},
	{ID: RuleShadowed, Severity: sevError, Title: "DestinationRule shadowed by another",
		Fix: "move the settings into the rule that is used, or remove the rule that shadows it"},
	{ID: SelectorRuleShadowsFallback, Severity: sevError, Title: "workloadSelector DestinationRule shadows the fallbacks",
		Fix: "add a DestinationRule without workloadSelector in the client namespace, or make a workloadSelector match the proxy"},
	{ID: SelectorRuleIgnored, Severity: sevWarning, Title: "workloadSelector DestinationRule ignored",
		Fix: "create the rule in the client's namespace, or change its workloadSelector to labels the intended workloads have"},
	{ID: HostNotInScope, Severity: sevError, Title: "service not in the proxy's scope",
		Fix: "import the host in the Sidecar's spec.egress[].hosts, or export the service to the client namespace"},
	{ID: SidecarPortTrimsPorts, Severity: sevWarning, Title: "Sidecar egress port trims the service's ports",
		Fix: "import the host in an egress listener without port (or one per port)"},
	{ID: SubsetNotRouted, Severity: sevWarning, Title: "subset not referenced by any route",
		Fix: "route to the subset from a VirtualService the client sees, or remove the subset"},
	{ID: RouteToUndefinedSubset, Severity: sevError, Title: "route references an undefined subset",
		Fix: "define the subset in the DestinationRule the client uses, or route to a subset it defines"},
	{ID: DuplicateSubsetDropped, Severity: sevWarning, Title: "duplicate subset dropped by merging",
		Fix: "rename or remove one of the subsets"},
	{ID: MergedTrafficPolicyIgnored, Severity: sevWarning, Title: "trafficPolicy of a merged DestinationRule ignored",
		Fix: "move the settings into the trafficPolicy that is used, or into subsets"},
	{ID: RulesNotMerged, Severity: sevWarning, Title: "DestinationRules for one host not merged",
		Fix: "give the rules the same spec.exportTo, or combine them into one DestinationRule"},
	{ID: PortLevelDropsBlocks, Severity: sevWarning, Title: "portLevelSettings entry drops blocks of the enclosing policy",
		Fix: "repeat the blocks to keep inside the portLevelSettings entry: port-level settings never inherit"},
	{ID: SubsetSelectsNothing, Severity: sevError, Title: "subset labels select no endpoint",
		Fix: "change the subset's labels to labels the service's endpoints have"},
	{ID: DNSClusterDropped, Severity: sevError, Title: "DNS cluster dropped for want of endpoints",
		Fix: "give the ServiceEntry endpoints, or a workloadSelector that selects workloads"},
	{ID: TLSConflict, Severity: sevError, Also: []explain.Severity{sevWarning}, Title: "TLS settings conflict with the server or the host",
		Fix: "leave tls unset (auto-mTLS) or use ISTIO_MUTUAL for in-mesh hosts, SIMPLE or MUTUAL with certificates for external ones"},
	{ID: CredentialNameIgnored, Severity: sevError, Title: "credentialName ignored on a sidecar",
		Fix: "add a workloadSelector to the DestinationRule, use file certificates, or originate TLS at an egress gateway"},
	{ID: HTTP2SettingsWithoutEffect, Severity: sevWarning, Title: "HTTP/2 settings without effect",
		Fix: "use an HTTP/2 port protocol or h2UpgradePolicy UPGRADE on an HTTP port, or drop the settings"},
	{ID: H2UpgradeOnNonHTTPPort, Severity: sevWarning, Title: "h2UpgradePolicy UPGRADE on a port that is not HTTP",
		Fix: "set UPGRADE only for ports that carry HTTP, or name the port with its protocol"},
	{ID: ConsistentHashInconsistent, Severity: sevWarning, Title: "consistentHash that does not hash as written",
		Fix: "use a hash key the port's protocol supports, and repeat loadBalancer in portLevelSettings entries"},
	{ID: OutlierDetectionSurprise, Severity: sevWarning, Title: "outlierDetection that behaves otherwise than it reads",
		Fix: "set the outlier detection fields explicitly, and add outlierDetection where locality failover is set"},
	{ID: MeshBaselineShadowed, Severity: sevInfo, Title: "MeshConfig defaultTrafficPolicy block replaced whole",
		Fix: "repeat the MeshConfig defaultTrafficPolicy fields to keep in the DestinationRule block"},
	{ID: MeshBaselineLostAtSubsetPort, Severity: sevWarning, Title: "MeshConfig baseline lost in a subset's portLevelSettings",
		Fix: "set the block in the subset's portLevelSettings entry"},
	{ID: TCPSettingsBelowTopLevel, Severity: sevWarning, Title: "TCP listener settings below the top level",
		Fix: "set tcp.idleTimeout and tcp.maxConnectionDuration in the top-level trafficPolicy"},
	{ID: RuleOnExternalNameAlias, Severity: sevWarning, Title: "DestinationRule on an ExternalName alias",
		Fix: "set spec.host to the alias's target"},
	{ID: PassthroughOnResolvedService, Severity: sevWarning, Title: "PASSTHROUGH load balancer on a resolved service",
		Fix: "remove PASSTHROUGH unless clients address pods directly"},
	{ID: EnvoyFilterPatchesClusters, Severity: sevInfo, Title: "EnvoyFilter patches the clusters",
		Fix: "check the patched fields with istioctl proxy-config cluster"},
	{ID: SelectorRuleDoesNotInherit, Severity: sevWarning, Title: "workloadSelector DestinationRule does not inherit the plain one",
		Fix: "add . to the plain rule's spec.exportTo, or copy what the selector rule needs into it"},
	{ID: TLSOriginationWithoutSNI, Severity: sevWarning, Title: "TLS origination without SNI on a port that is not HTTP",
		Fix: "set tls.sni to the server name"},
	{ID: RejectedByValidation, Severity: sevWarning, Title: "networking value Istio's validation rejects",
		Fix: "fix the value: the admission webhook rejects the object as written"},

	{ID: NotCaptured, Severity: sevWarning, Title: "pod not captured by ztunnel as it seems",
		Fix: "label the namespace (or the pod) istio.io/dataplane-mode=ambient, without a sidecar"},
	{ID: PeerAuthenticationTie, Severity: sevWarning, Also: []explain.Severity{sevInfo}, Title: "PeerAuthentications tied on creationTimestamp",
		Fix: "keep one PeerAuthentication per level, or recreate the one to lose so it is newer"},
	{ID: RootSelectorPeerAuthentication, Severity: sevWarning, Title: "PeerAuthentication with a selector that has no effect",
		Fix: "put a workload policy in the workload's namespace, or remove the selector for a mesh-wide policy"},
	{ID: DanglingPolicyKey, Severity: sevWarning, Title: "workload lists a policy istiod does not push",
		Fix: "set the workload PeerAuthentication's mode explicitly (STRICT or PERMISSIVE)"},
	{ID: LosesStrict, Severity: sevError, Title: "workload silently loses STRICT",
		Fix: "give the workload PeerAuthentication an explicit top-level mode, or set the namespace policy's mode"},
	{ID: UnreferencedPeerAuthentication, Severity: sevWarning, Title: "converted PeerAuthentication not referenced by the workload",
		Fix: "use PERMISSIVE rather than DISABLE for the exempted port, or set the workload policy's mode to STRICT"},
	{ID: HTTPFieldsInAllow, Severity: sevWarning, Title: "HTTP conditions in an ALLOW rule enforced by ztunnel",
		Fix: "move the HTTP conditions to a waypoint policy (targetRefs)"},
	{ID: HTTPFieldsInDeny, Severity: sevWarning, Title: "HTTP conditions in a DENY rule enforced by ztunnel",
		Fix: "enforce HTTP conditions on a waypoint policy (targetRefs)"},
	{ID: ValueDroppedSilently, Severity: sevWarning, Title: "value dropped silently in conversion",
		Fix: "write the value in a form ztunnel enforces, or enforce it on a waypoint"},
	{ID: UnsupportedAction, Severity: sevWarning, Title: "action ztunnel does not enforce",
		Fix: "use ALLOW or DENY, or attach the policy to a waypoint with targetRefs"},
	{ID: DryRun, Severity: sevWarning, Title: "dry-run policy",
		Fix: "remove the dry-run annotation to enforce the policy"},
	{ID: EmptySelector, Severity: sevWarning, Title: "selector without labels",
		Fix: "remove spec.selector to apply the policy to the whole namespace, or add matchLabels"},
	{ID: ServicePortInPortLevelMtls, Severity: sevWarning, Title: "portLevelMtls keyed by a Service port",
		Fix: "key the entry by the container port"},
	{ID: MalformedPrincipal, Severity: sevWarning, Title: "principal that never matches as written",
		Fix: "write principals as <trust domain>/ns/<namespace>/sa/<service account>"},
	{ID: PodWithoutLabels, Severity: sevWarning, Title: "pod without labels",
		Fix: "give the pod labels (controllers always do)"},
	{ID: DisableIsPermissive, Severity: sevInfo, Title: "DISABLE means PERMISSIVE in ambient",
		Fix: "write PERMISSIVE, which says what ztunnel does"},
	{ID: InvalidRule, Severity: sevWarning, Title: "rule Istio's validation rejects",
		Fix: "fix or remove the entry"},
	{ID: LoadIssue, Severity: sevWarning, Also: []explain.Severity{sevError}, Title: "object that could not be read",
		Fix: "fix the object; everything else is explained without it"},
	{ID: AllowNothing, Severity: sevInfo, Title: "ALLOW policy without rules",
		Fix: "add rules, or delete the policy"},
	{ID: RuleNeverMatches, Severity: sevWarning, Title: "rule that never matches",
		Fix: "write numeric ports and valid IPs, or remove the rule"},
	{ID: DataplaneModeAnnotation, Severity: sevWarning, Title: "dataplane mode set as an annotation",
		Fix: "set it as a label instead"},
	{ID: OtherRevision, Severity: sevInfo, Title: "object of another istiod revision",
		Fix: "label the object with the revision that serves the workload"},
	{ID: ExemptionStillStrict, Severity: sevWarning, Title: "port exempted from STRICT still rejects plaintext",
		Fix: "use PERMISSIVE rather than DISABLE for the port exemption, or set the workload policy's mode to STRICT"},
	{ID: ParentPeerAuthenticationTie, Severity: sevWarning, Title: "parents of a workload PeerAuthentication tied",
		Fix: "keep one selector-less PeerAuthentication per namespace"},
	{ID: PolicyRejectedByValidation, Severity: sevWarning, Title: "policy value Istio's validation rejects",
		Fix: "fix the value: the admission webhook rejects the object as written"},

	{ID: SidecarHTTPFieldsWidenOnTCP, Severity: sevWarning, Title: "DENY, AUDIT or CUSTOM rule widened on TCP chains",
		Fix: "restrict the rule to HTTP ports with to.operation.ports, or move the HTTP condition to a policy for an HTTP port"},
	{ID: SidecarAllowDroppedOnTCP, Severity: sevWarning, Title: "ALLOW rule dropped on TCP chains",
		Fix: "add an ALLOW rule without HTTP-only fields for the TCP traffic you expect"},
	{ID: SidecarIdentityOnPlaintext, Severity: sevWarning, Also: []explain.Severity{sevInfo}, Title: "identity condition on a port that accepts plaintext",
		Fix: "make the ports STRICT (PeerAuthentication) so every caller presents an identity"},
	{ID: SidecarCustomProviderUnusable, Severity: sevError, Title: "CUSTOM provider that cannot be used",
		Fix: "define the provider in MeshConfig extensionProviders, with a service that exists, or fix the name"},
	{ID: SidecarHTTPProviderOnTCP, Severity: sevWarning, Title: "CUSTOM HTTP provider not enforced on TCP chains",
		Fix: "use an envoyExtAuthzGrpc provider to cover TCP, or add a DENY or ALLOW policy for the TCP ports"},
	{ID: SidecarDryRunAllow, Severity: sevInfo, Title: "dry-run ALLOW policy",
		Fix: "remove the istio.io/dry-run annotation (or set it to false) to enforce the policy"},
	{ID: SidecarServicePortInPortLevelMtls, Severity: sevWarning, Title: "portLevelMtls key that is a Service port",
		Fix: "key portLevelMtls by the pod's (target) port"},
	{ID: SidecarPortLevelWithoutService, Severity: sevInfo, Title: "portLevelMtls key for a port no Service exposes",
		Fix: "expose the port in a Service, or remove the key"},
	{ID: SidecarRootSelectorPeerAuthentication, Severity: sevWarning, Title: "root-namespace PeerAuthentication with a selector",
		Fix: "put a workload policy in the workload's namespace, or remove the selector for a mesh-wide policy"},
	{ID: SidecarTargetRefIgnored, Severity: sevInfo, Title: "targetRef policy ignored by a sidecar",
		Fix: "use spec.selector for a policy the sidecar enforces"},
	{ID: SidecarBadValue, Severity: sevError, Also: []explain.Severity{sevWarning}, Title: "value istiod cannot convert",
		Fix: "fix the value: ports are numbers 0-65535, IPs and CIDRs must parse"},
	{ID: SidecarInvalidRule, Severity: sevError, Title: "rule istiod cannot build",
		Fix: "use a supported when key"},
	{ID: SidecarChainOrderFromMap, Severity: sevInfo, Title: "catch-all chains in map order",
		Fix: "nothing to fix for Envoy; compare chains by port, not by position"},
	{ID: SidecarLoadIssue, Severity: sevWarning, Also: []explain.Severity{sevError}, Title: "object that could not be read",
		Fix: "fix the object; everything else is explained without it"},
	{ID: SidecarInboundPortConflict, Severity: sevInfo, Title: "two Services on one target port",
		Fix: "give the Services the same protocol for the port, or one Service per port"},
	{ID: SidecarNoRequestAuthentication, Severity: sevWarning, Title: "request principals without a RequestAuthentication",
		Fix: "add a RequestAuthentication that selects the workload"},
	{ID: SidecarPrincipalMatchedLiterally, Severity: sevWarning, Title: "principal matched literally",
		Fix: "write <trust domain>/ns/<namespace>/sa/<service account>, with * only at the start or the end"},
	{ID: SidecarRejectedByValidation, Severity: sevWarning, Title: "policy value Istio's validation rejects",
		Fix: "fix the value: the admission webhook rejects the object as written"},

	{ID: WaypointSelectorPolicyIgnored, Severity: sevWarning, Title: "policy without targetRefs ignored by a waypoint",
		Fix: "attach the policy to the waypoint with spec.targetRefs (the Gateway, or the Service or ServiceEntry it serves) instead of spec.selector"},
	{ID: WaypointTargetNotBound, Severity: sevWarning, Title: "targetRef names a service the waypoint does not serve",
		Fix: "label the service (or its namespace) istio.io/use-waypoint=<waypoint>, or target the service's own waypoint"},
	{ID: WaypointTargetRefMissing, Severity: sevWarning, Title: "targetRef that names nothing",
		Fix: "name an existing Gateway, Service or ServiceEntry of the policy's namespace, or the GatewayClass istio-waypoint from the root namespace"},
	{ID: WaypointGatewayClassOutsideRoot, Severity: sevWarning, Title: "GatewayClass targetRef outside the root namespace",
		Fix: "move the policy to the root namespace, or target the Gateway"},
	{ID: WaypointNotDeployed, Severity: sevWarning, Title: "waypoint Gateway without addresses",
		Fix: "deploy the waypoint (istioctl waypoint apply, or wait for istiod to program the Gateway); from files, read the answer as the assumption says"},
	{ID: WaypointHTTPFieldsOnTCP, Severity: sevWarning, Title: "rule with HTTP-only fields on a TCP chain",
		Fix: "give the service port an HTTP protocol (name or appProtocol), or add a rule without HTTP-only fields for the TCP traffic"},
	{ID: WaypointCustomProviderUnusable, Severity: sevError, Title: "CUSTOM provider that cannot be used by a waypoint",
		Fix: "define the provider in MeshConfig extensionProviders, with a service that exists, or fix the name"},
	{ID: WaypointBindingRefused, Severity: sevWarning, Title: "object names the waypoint but is not bound",
		Fix: "allow the namespace on the waypoint's HBONE listener (allowedRoutes), or set the istio.io/waypoint-for label the traffic needs"},
	{ID: WaypointIdentityRejected, Severity: sevError, Title: "ztunnel policy rejects what the waypoint forwards",
		Fix: "allow the waypoint's identity at ztunnel (an ALLOW rule for principal <trust domain>/ns/<waypoint namespace>/sa/<waypoint service account>, or PILOT_AUTO_ALLOW_WAYPOINT_POLICY on istiod), and move client rules to a targetRef policy on the waypoint"},
	{ID: WaypointBypassedByPlaintext, Severity: sevWarning, Title: "plaintext clients bypass the waypoint's policies",
		Fix: "make the pod's PeerAuthentication STRICT, and allow the waypoint's identity at ztunnel so mesh clients go through the waypoint"},
	{ID: WaypointServesNothing, Severity: sevError, Title: "waypoint whose address is not its Service's",
		Fix: "restore the waypoint's Service (istioctl waypoint apply creates it), selecting the waypoint's pods, with the cluster IP or hostname of the Gateway's status.addresses"},
}

var index = func() map[ID]Entry {
	m := make(map[ID]Entry, len(Catalogue))
	for _, x := range Catalogue {
		m[x.ID] = x
	}
	return m
}()
