package ztunnelauthz

import (
	"encoding/json"
	"fmt"
	"strconv"

	"sigs.k8s.io/yaml"
)

// The types below mirror `istio.security.Authorization` (istio/istio
// pkg/workloadapi/security/authorization.proto), the resource istiod pushes to ztunnel over
// WDS. They serialise exactly as Istio's pkg/util/protomarshal.ToYAML prints the proto:
// golang/protobuf jsonpb with default options (lowerCamelCase names, enums by name, zero values
// omitted, bytes as standard base64, google.protobuf.Empty as {}), then
// sigs.k8s.io/yaml.JSONToYAML (map keys sorted, list order kept).

// Scope is istio.security.Scope.
type Scope int32

// Scopes. GLOBAL is the zero value, so a GLOBAL policy has no `scope` key.
const (
	ScopeGlobal           Scope = 0
	ScopeNamespace        Scope = 1
	ScopeWorkloadSelector Scope = 2
)

var scopeNames = map[Scope]string{ScopeGlobal: "GLOBAL", ScopeNamespace: "NAMESPACE", ScopeWorkloadSelector: "WORKLOAD_SELECTOR"}

// String returns the proto enum name (or the number for unknown values, as protojson does).
func (s Scope) String() string {
	if n, ok := scopeNames[s]; ok {
		return n
	}
	return strconv.Itoa(int(s))
}

// MarshalJSON writes the enum name.
func (s Scope) MarshalJSON() ([]byte, error) {
	return enumJSON(s.String(), int32(s), scopeNames[s] != "")
}

// UnmarshalJSON accepts the enum name or its number.
func (s *Scope) UnmarshalJSON(b []byte) error {
	v, err := enumFromJSON(b, func(n string) (int32, bool) {
		for k, name := range scopeNames {
			if name == n {
				return int32(k), true
			}
		}
		return 0, false
	})
	*s = Scope(v)
	return err
}

// Action is istio.security.Action.
type Action int32

// Actions. ALLOW is the zero value, so an ALLOW policy has no `action` key.
const (
	ActionAllow Action = 0
	ActionDeny  Action = 1
)

var actionNames = map[Action]string{ActionAllow: "ALLOW", ActionDeny: "DENY"}

// String returns the proto enum name.
func (a Action) String() string {
	if n, ok := actionNames[a]; ok {
		return n
	}
	return strconv.Itoa(int(a))
}

// MarshalJSON writes the enum name.
func (a Action) MarshalJSON() ([]byte, error) {
	return enumJSON(a.String(), int32(a), actionNames[a] != "")
}

// UnmarshalJSON accepts the enum name or its number.
func (a *Action) UnmarshalJSON(b []byte) error {
	v, err := enumFromJSON(b, func(n string) (int32, bool) {
		for k, name := range actionNames {
			if name == n {
				return int32(k), true
			}
		}
		return 0, false
	})
	*a = Action(v)
	return err
}

func enumJSON(name string, n int32, known bool) ([]byte, error) {
	if !known {
		// jsonpb writes unknown enum values as numbers.
		return []byte(strconv.Itoa(int(n))), nil
	}
	return json.Marshal(name)
}

func enumFromJSON(b []byte, byName func(string) (int32, bool)) (int32, error) {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		if v, ok := byName(name); ok {
			return v, nil
		}
		return 0, fmt.Errorf("unknown enum value %q", name)
	}
	var n int32
	if err := json.Unmarshal(b, &n); err != nil {
		return 0, fmt.Errorf("enum value %s is neither a name nor a number", b)
	}
	return n, nil
}

// Authorization is istio.security.Authorization: one ztunnel policy. Its xDS resource name (the
// key workloads list) is `<namespace>/<name>`.
type Authorization struct {
	Name      string   `json:"name,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Scope     Scope    `json:"scope,omitempty"`
	Action    Action   `json:"action,omitempty"`
	Groups    []*Group `json:"groups,omitempty"`
	DryRun    bool     `json:"dryRun,omitempty"`
}

// Key is the resource name ztunnel knows the policy by: `<namespace>/<name>`
// (pilot/pkg/model/service.go WorkloadAuthorization.ResourceName).
func (a *Authorization) Key() string { return a.Namespace + "/" + a.Name }

// JSON returns the proto JSON form (jsonpb default options).
func (a *Authorization) JSON() ([]byte, error) { return json.Marshal(a) }

// YAML returns the form Istio's protomarshal.ToYAML prints, byte for byte.
func (a *Authorization) YAML() ([]byte, error) {
	js, err := a.JSON()
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(js)
}

// Group is istio.security.Group (ztunnel calls it a Rule). It matches when every one of its
// Rules (clauses) matches; a Group with no Rules always matches.
type Group struct {
	Rules []*Rules `json:"rules,omitempty"`
}

// Rules is istio.security.Rules (ztunnel: Clause). It matches when any of its non-empty
// Matches matches; empty matches are skipped (ztunnel src/rbac.rs).
type Rules struct {
	Matches []*Match `json:"matches,omitempty"`
}

// Match is istio.security.Match. Every populated field pair must pass. Field order follows
// the proto declaration, which is the order jsonpb writes JSON in.
type Match struct {
	Namespaces          []*StringMatch         `json:"namespaces,omitempty"`
	NotNamespaces       []*StringMatch         `json:"notNamespaces,omitempty"`
	ServiceAccounts     []*ServiceAccountMatch `json:"serviceAccounts,omitempty"`
	NotServiceAccounts  []*ServiceAccountMatch `json:"notServiceAccounts,omitempty"`
	Principals          []*StringMatch         `json:"principals,omitempty"`
	NotPrincipals       []*StringMatch         `json:"notPrincipals,omitempty"`
	SourceIps           []*Address             `json:"sourceIps,omitempty"`
	NotSourceIps        []*Address             `json:"notSourceIps,omitempty"`
	DestinationIps      []*Address             `json:"destinationIps,omitempty"`
	NotDestinationIps   []*Address             `json:"notDestinationIps,omitempty"`
	DestinationPorts    []uint32               `json:"destinationPorts,omitempty"`
	NotDestinationPorts []uint32               `json:"notDestinationPorts,omitempty"`
}

// IsEmpty reports whether no field is set; ztunnel skips such a match (`{}`).
func (m *Match) IsEmpty() bool {
	return m == nil || len(m.Namespaces)+len(m.NotNamespaces)+len(m.ServiceAccounts)+len(m.NotServiceAccounts)+
		len(m.Principals)+len(m.NotPrincipals)+len(m.SourceIps)+len(m.NotSourceIps)+len(m.DestinationIps)+
		len(m.NotDestinationIps)+len(m.DestinationPorts)+len(m.NotDestinationPorts) == 0
}

// Address is istio.security.Address: an IP (4 or 16 bytes) and a prefix length.
type Address struct {
	Address []byte `json:"address,omitempty"`
	Length  uint32 `json:"length,omitempty"`
}

// ServiceAccountMatch is istio.security.ServiceAccountMatch.
type ServiceAccountMatch struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount string `json:"serviceAccount,omitempty"`
}

// StringMatchKind selects the oneof member of a StringMatch.
type StringMatchKind int

// The StringMatch kinds. StringMatchUnset writes `{}`.
const (
	StringMatchUnset StringMatchKind = iota
	StringMatchExact
	StringMatchPrefix
	StringMatchSuffix
	StringMatchPresence
)

// StringMatch is istio.security.StringMatch, a oneof of exact, prefix, suffix and presence.
// jsonpb writes the set member even when its value is empty (`exact: ""`).
type StringMatch struct {
	Kind  StringMatchKind
	Value string
}

// Exact, Prefix, Suffix and Presence build StringMatches.
func Exact(v string) *StringMatch  { return &StringMatch{Kind: StringMatchExact, Value: v} }
func Prefix(v string) *StringMatch { return &StringMatch{Kind: StringMatchPrefix, Value: v} }
func Suffix(v string) *StringMatch { return &StringMatch{Kind: StringMatchSuffix, Value: v} }
func Presence() *StringMatch       { return &StringMatch{Kind: StringMatchPresence} }

// String is a short human form: `exact:a`, `prefix:a`, `suffix:a`, `presence`.
func (s *StringMatch) String() string {
	switch s.Kind {
	case StringMatchExact:
		return "exact:" + s.Value
	case StringMatchPrefix:
		return "prefix:" + s.Value
	case StringMatchSuffix:
		return "suffix:" + s.Value
	case StringMatchPresence:
		return "presence"
	}
	return "{}"
}

// MarshalJSON writes the oneof member: {"exact":"v"}, {"presence":{}}.
func (s StringMatch) MarshalJSON() ([]byte, error) {
	switch s.Kind {
	case StringMatchExact:
		return json.Marshal(map[string]string{"exact": s.Value})
	case StringMatchPrefix:
		return json.Marshal(map[string]string{"prefix": s.Value})
	case StringMatchSuffix:
		return json.Marshal(map[string]string{"suffix": s.Value})
	case StringMatchPresence:
		return []byte(`{"presence":{}}`), nil
	}
	return []byte(`{}`), nil
}

// UnmarshalJSON reads the oneof member back.
func (s *StringMatch) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*s = StringMatch{}
	if len(raw) > 1 {
		return fmt.Errorf("string match sets more than one of exact, prefix, suffix, presence")
	}
	for k, v := range raw {
		switch k {
		case "presence":
			s.Kind = StringMatchPresence
			return nil
		case "exact":
			s.Kind = StringMatchExact
		case "prefix":
			s.Kind = StringMatchPrefix
		case "suffix":
			s.Kind = StringMatchSuffix
		default:
			return fmt.Errorf("unknown string match field %q", k)
		}
		return json.Unmarshal(v, &s.Value)
	}
	return nil
}
