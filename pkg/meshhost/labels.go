package meshhost

// LabelsSubsetOf is labels.Instance.SubsetOf (istio.io/istio pkg/config/labels/instance.go) of
// a selector: every label of sel is among labels with the same value. An empty selector selects
// everything, also a workload without labels.
func LabelsSubsetOf(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return true
	}
	if len(labels) < len(sel) {
		return false
	}
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
