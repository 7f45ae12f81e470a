package gateway

import (
	"encoding/xml"
	"net/http"
)

// The bucket configurations flyfs does not keep read as AWS reads a bucket
// that has none of them: an empty document where AWS answers one (logging,
// notifications, transfer acceleration, request payment), the
// configuration's not-found error elsewhere (noSuchConfig). Setting any of
// them is NotImplemented.

type bucketLoggingStatus struct {
	XMLName xml.Name `xml:"BucketLoggingStatus"`
	NS      string   `xml:"xmlns,attr"`
}

type notificationConfiguration struct {
	XMLName xml.Name `xml:"NotificationConfiguration"`
	NS      string   `xml:"xmlns,attr"`
}

type accelerateConfiguration struct {
	XMLName xml.Name `xml:"AccelerateConfiguration"`
	NS      string   `xml:"xmlns,attr"`
}

type requestPaymentConfiguration struct {
	XMLName xml.Name `xml:"RequestPaymentConfiguration"`
	NS      string   `xml:"xmlns,attr"`
	Payer   string   `xml:"Payer"`
}

// emptyConfig answers a bucket's configuration document v.
func (g *Gateway) emptyConfig(w http.ResponseWriter, r *http.Request, rc *reqCtx, v any) error {
	if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	return writeXML(w, v)
}

// getBucketLogging: server access logging is off.
func (g *Gateway) getBucketLogging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.emptyConfig(w, r, rc, bucketLoggingStatus{NS: s3NS})
}

// getBucketNotification: no event notifications are sent.
func (g *Gateway) getBucketNotification(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.emptyConfig(w, r, rc, notificationConfiguration{NS: s3NS})
}

// getBucketAccelerate: transfer acceleration was never enabled.
func (g *Gateway) getBucketAccelerate(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.emptyConfig(w, r, rc, accelerateConfiguration{NS: s3NS})
}

// getBucketRequestPayment: the bucket owner pays (nobody is charged).
func (g *Gateway) getBucketRequestPayment(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	return g.emptyConfig(w, r, rc, requestPaymentConfiguration{NS: s3NS, Payer: "BucketOwner"})
}
