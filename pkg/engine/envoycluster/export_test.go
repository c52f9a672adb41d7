package envoycluster

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
)

// HostWholeTraces is Host with the traces of every cluster kept whole, not against the traces
// of earlier clusters.
func (e *Explainer) HostWholeTraces(hostname string) (*HostClusters, error) {
	return e.host(hostname, 0, "", slowPaths{wholeTraces: true})
}

// SharedMessagesChanged returns the shared sub-messages (every field of commonMessages) that no
// longer equal what newCommonMessages builds: a build wrote to a message other clusters point at.
func SharedMessagesChanged() []string {
	now, fresh := reflect.ValueOf(common).Elem(), reflect.ValueOf(newCommonMessages()).Elem()
	var out []string
	for i := range now.NumField() {
		got, ok := reflect.NewAt(now.Field(i).Type(), now.Field(i).Addr().UnsafePointer()).Elem().Interface().(proto.Message)
		if !ok {
			out = append(out, fmt.Sprintf("commonMessages.%s is not a message", now.Type().Field(i).Name))
			continue
		}
		want := reflect.NewAt(fresh.Field(i).Type(), fresh.Field(i).Addr().UnsafePointer()).Elem().Interface().(proto.Message)
		if !proto.Equal(got, want) {
			out = append(out, fmt.Sprintf("%s = %v, want %v", now.Type().Field(i).Name, got, want))
		}
	}
	return out
}
