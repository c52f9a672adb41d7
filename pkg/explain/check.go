package explain

import "github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"

// KindCheckReport is the Kind of the `check` document.
const KindCheckReport = "CheckReport"

// CheckReport is the `check` document: every finding of the per-host (`cluster`) and
// per-workload (`authz`) answers over the scope checked, one finding per cause.
type CheckReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Scope says what was checked.
	Scope CheckScope `json:"scope"`
	// Findings are sorted by severity, then ID, then the resource to change, then message.
	// Silenced findings are kept, with Ignored set.
	Findings []Finding `json:"findings"`
	// Warnings are things that could not be read or inferred.
	Warnings []string `json:"warnings,omitempty"`
	// Incomplete names what the check needed and could not read, as Result.Incomplete does:
	// findings may be missing.
	Incomplete []string `json:"incomplete,omitempty"`
}

// CheckScope is what a check covered.
type CheckScope struct {
	// Namespaces are the client and workload namespaces checked; empty means all (-A, files).
	Namespaces []string `json:"namespaces,omitempty"`
	// Hosts is the number of hosts (Service and ServiceEntry hostnames) explained.
	Hosts int `json:"hosts"`
	// Clients is the number of client proxies (namespace defaults, sidecar pods and gateway
	// pods) the hosts were explained for; ClientClasses the number of groups of them that get
	// the same answer.
	Clients       int `json:"clients"`
	ClientClasses int `json:"clientClasses"`
	// Workloads is the number of workloads whose inbound authorization was explained;
	// DataPlanes splits it by the data plane that answered ("ambient": the ztunnel answer,
	// "sidecar": the sidecar's filter chains).
	Workloads  int            `json:"workloads"`
	DataPlanes map[string]int `json:"dataPlanes,omitempty"`
	// Waypoints is the number of waypoints (Gateways of class istio-waypoint) whose answer
	// (`authz waypoint/NAME`) was explained.
	Waypoints int `json:"waypoints"`
	// Gateways is the number of gateway pods (their istio-proxy runs as a router) among the
	// Clients: the hosts are explained from them as `cluster --from pod/NAME` does. They are not
	// workloads, since `authz` does not explain a gateway's listeners (a gateway ztunnel
	// captures is one, with the ztunnel answer).
	Gateways int `json:"gateways,omitempty"`
	// Diff is set when the findings are those an --overlay change introduces or removes.
	Diff bool `json:"diff,omitempty"`
}

// Change says how a finding of a --diff check relates to the live state.
type Change string

// Changes.
const (
	// ChangeAdded: the change introduces the finding.
	ChangeAdded Change = "added"
	// ChangeRemoved: the change removes a finding of the live state.
	ChangeRemoved Change = "removed"
)

// Finding is one cause, with everything it affects.
type Finding struct {
	Diagnostic
	// Details are the other messages of the cause: the answers that report it say it about
	// their own cluster or client (Message is the first, sorted).
	Details []string `json:"details,omitempty"`
	// Resource is the object to change (the first of Resources), and Field the field of it
	// that the fix names, when it names one.
	Resource *provenance.Ref `json:"resource,omitempty"`
	Field    string          `json:"field,omitempty"`
	// Position is the file position of Field (else of Resource) when it was read from a file.
	Position *provenance.Position `json:"position,omitempty"`
	// Hosts are the hosts whose answer reports the finding, Clients the client sidecars they
	// report it for, Workloads the workloads (`Pod ns/name`) whose answer reports it,
	// Waypoints the waypoints.
	Hosts     []string `json:"hosts,omitempty"`
	Clients   []string `json:"clients,omitempty"`
	Workloads []string `json:"workloads,omitempty"`
	// Waypoints are the waypoints (`Gateway NS/NAME`) whose answers report it.
	Waypoints []string `json:"waypoints,omitempty"`
	// Ignored says why the finding is silenced (--ignore, or the mesh-explain.io/ignore
	// annotation of an object); silenced findings never fail the check.
	Ignored string `json:"ignored,omitempty"`
	// Change is set by --diff.
	Change Change `json:"change,omitempty"`
}
