package explain

import "fmt"

// NotFoundError is returned when the subject of an explanation does not exist (a host that
// matches no service, a pod that is not there). The CLI exits non-zero with its message.
type NotFoundError struct {
	// What names the missing thing: `host "reviews.bookinfo"`, `pod foo/a`.
	What string
	// Hint is the nearest candidates or the fix, e.g. "did you mean reviews.bookinfo.svc.cluster.local?".
	Hint string
}

func (e *NotFoundError) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("%s not found", e.What)
	}
	return fmt.Sprintf("%s not found (%s)", e.What, e.Hint)
}

// InvalidQueryError is returned for a query that cannot be answered as asked (a port the
// service does not have, a subset no DestinationRule defines).
type InvalidQueryError struct{ Message string }

func (e *InvalidQueryError) Error() string { return e.Message }
