package envoycluster

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// SharedMessagesChanged returns the shared sub-messages that no longer equal what
// newCommonMessages builds: a build wrote to a message other clusters point at.
func SharedMessagesChanged() []string {
	now, fresh := common, newCommonMessages()
	pairs := []struct {
		name     string
		got, new proto.Message
	}{
		{"edsConfig", now.edsConfig, fresh.edsConfig},
		{"metadataExchange", now.metadataExchange, fresh.metadataExchange},
		{"tlsModeIstio", now.tlsModeIstio, fresh.tlsModeIstio},
		{"plaintextMatch", now.plaintextMatch, fresh.plaintextMatch},
		{"rawBuffer", now.rawBuffer, fresh.rawBuffer},
		{"u32Zero", now.u32Zero, fresh.u32Zero},
		{"u32Hundred", now.u32Hundred, fresh.u32Hundred},
		{"u32Max", now.u32Max, fresh.u32Max},
	}
	var out []string
	for _, p := range pairs {
		if !proto.Equal(p.got, p.new) {
			out = append(out, fmt.Sprintf("%s = %v, want %v", p.name, p.got, p.new))
		}
	}
	return out
}
