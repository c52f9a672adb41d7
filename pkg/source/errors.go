package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ClusterError is a failure to talk to the cluster at all (refused connection, timeout, bad
// credentials). Its message is kubectl's (k8s.io/kubectl cmdutil.StandardErrorMessage), in lower
// case; Unwrap gives the client-go error.
type ClusterError struct {
	msg   string
	cause error
}

func (e *ClusterError) Error() string { return e.msg }

// Unwrap returns the underlying client-go error.
func (e *ClusterError) Unwrap() error { return e.cause }

// fatal is true for errors that end the load: the cluster could not be reached at all (the
// connection was refused, the host is unknown, TLS failed) or refused our credentials. Every
// other failure (forbidden, throttled, a server error, a timeout, a connection dropped
// mid-body, a malformed or oversized response) only makes the kind it read incomplete.
func fatal(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsUnauthorized(err) {
		return true
	}
	return unreachable(err)
}

// unreachable is true when a request never reached the API server.
func unreachable(err error) bool {
	if utilnet.IsConnectionRefused(err) || strings.Contains(err.Error(), "connection refused") {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record)
}

// apiStatus is true for an error the API server answered with a Status.
func apiStatus(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// clusterErr spells a fatal error the way kubectl does.
func clusterErr(err error, host string) error {
	if apierrors.IsUnauthorized(err) {
		reason := "Unauthorized"
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Message != "" {
			reason = status.Status().Message
		}
		return &ClusterError{msg: fmt.Sprintf("you must be logged in to the server (%s)", reason), cause: err}
	}
	if errors.Is(err, context.Canceled) {
		return &ClusterError{msg: "reading the cluster was canceled", cause: err}
	}
	// A timeout surfaces as a client timeout or as the request context's deadline, depending on
	// which fires first; both read the same.
	var ne interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &ClusterError{msg: "unable to connect to the server: Timeout: the server did not answer within the request timeout", cause: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if utilnet.IsConnectionRefused(ue.Err) || strings.Contains(ue.Err.Error(), "connection refused") {
			h := ue.URL
			if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
				h = u.Host
			}
			return &ClusterError{msg: fmt.Sprintf("the connection to the server %s was refused - did you specify the right host or port?", h), cause: err}
		}
		return &ClusterError{msg: fmt.Sprintf("unable to connect to the server: %v", ue.Err), cause: err}
	}
	if utilnet.IsConnectionRefused(err) && host != "" {
		return &ClusterError{msg: fmt.Sprintf("the connection to the server %s was refused - did you specify the right host or port?", host), cause: err}
	}
	return &ClusterError{msg: fmt.Sprintf("unable to connect to the server: %v", err), cause: err}
}

// hostOf is the host:port of an API server URL.
func hostOf(server string) string {
	if u, err := url.Parse(server); err == nil && u.Host != "" {
		return u.Host
	}
	return server
}
