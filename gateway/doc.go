// Package gateway is the S3-compatible HTTP gateway over the shared
// namespace: a bucket is a top-level directory, an object key the path below
// it (docs/s3-mapping.md). Requests are routed by method and subresource in
// routes.go; each operation has its file (put, get, copy, delete, rename,
// multipart, tagging, bucket, list), errors map to S3 codes through the one
// table in errors.go, and listings come out in S3 key order by keyorder.go.
// Access keys are the cluster's, reached through core/client.
package gateway
