package conformance

import (
	_ "istio.io/istio/pilot/pkg/serviceregistry/ambient"
	_ "istio.io/istio/pilot/test/xds"
	_ "istio.io/istio/pkg/config/schema/collections"
	_ "istio.io/istio/pkg/test"
)
