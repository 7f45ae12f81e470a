// Package gateway is the S3-compatible HTTP gateway over the shared namespace.
// Built by the S3 issue.
package gateway
