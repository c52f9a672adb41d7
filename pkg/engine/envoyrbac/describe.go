package envoyrbac

import (
	"bytes"
	"encoding/json"
	"fmt"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// describe spells a generated permission or principal for the table: `header :method exact
// GET`, `authenticated principal exact spiffe://...`; anything else in compact protojson.
func describe(m proto.Message) string {
	switch v := m.(type) {
	case *rbacpb.Permission:
		switch r := v.Rule.(type) {
		case *rbacpb.Permission_Any:
			return "any"
		case *rbacpb.Permission_Header:
			return "header " + describeHeader(r.Header)
		case *rbacpb.Permission_UrlPath:
			return "path " + describeString(r.UrlPath.GetPath())
		case *rbacpb.Permission_DestinationPort:
			return fmt.Sprintf("destination port %d", r.DestinationPort)
		case *rbacpb.Permission_DestinationIp:
			return fmt.Sprintf("destination ip %s/%d", r.DestinationIp.GetAddressPrefix(), r.DestinationIp.GetPrefixLen().GetValue())
		case *rbacpb.Permission_RequestedServerName:
			return "sni " + describeString(r.RequestedServerName)
		case *rbacpb.Permission_NotRule:
			return "not " + describe(r.NotRule)
		}
	case *rbacpb.Principal:
		switch r := v.Identifier.(type) {
		case *rbacpb.Principal_Any:
			return "any"
		case *rbacpb.Principal_Authenticated_:
			return "peer principal " + describeString(r.Authenticated.GetPrincipalName())
		case *rbacpb.Principal_FilterState:
			return "peer principal (filter state) " + describeString(r.FilterState.GetStringMatch())
		case *rbacpb.Principal_DirectRemoteIp:
			return fmt.Sprintf("source ip %s/%d", r.DirectRemoteIp.GetAddressPrefix(), r.DirectRemoteIp.GetPrefixLen().GetValue())
		case *rbacpb.Principal_RemoteIp:
			return fmt.Sprintf("remote ip %s/%d", r.RemoteIp.GetAddressPrefix(), r.RemoteIp.GetPrefixLen().GetValue())
		case *rbacpb.Principal_Header:
			return "header " + describeHeader(r.Header)
		case *rbacpb.Principal_NotId:
			return "not " + describe(r.NotId)
		}
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	// protojson varies its whitespace on purpose: compact it so the text depends on m only.
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return string(b)
	}
	return c.String()
}

func describeHeader(h *routepb.HeaderMatcher) string {
	if h.GetPresentMatch() {
		return h.GetName() + " present"
	}
	return h.GetName() + " " + describeString(h.GetStringMatch())
}

func describeString(m *matcherpb.StringMatcher) string {
	ic := ""
	if m.GetIgnoreCase() {
		ic = " (any case)"
	}
	switch p := m.GetMatchPattern().(type) {
	case *matcherpb.StringMatcher_Exact:
		return "exact " + p.Exact + ic
	case *matcherpb.StringMatcher_Prefix:
		return "prefix " + p.Prefix + ic
	case *matcherpb.StringMatcher_Suffix:
		return "suffix " + p.Suffix + ic
	case *matcherpb.StringMatcher_SafeRegex:
		return "regex " + p.SafeRegex.GetRegex()
	case *matcherpb.StringMatcher_Contains:
		return "contains " + p.Contains + ic
	}
	return "?"
}
