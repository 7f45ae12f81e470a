package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"

	"github.com/flyfs/flyfs/core/client"
)

// APIError is an S3 error: a code clients switch on, the HTTP status that
// goes with it, and a message for humans.
type APIError struct {
	Code    string
	Status  int
	Message string
	// Resource and extra fields echoed in the XML body when set.
	Key, Bucket string
	// Method and ResourceType: what a refused CORS preflight asked about.
	Method, ResourceType string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// s3Errors is the one table of S3 error codes this gateway answers with.
var s3Errors = map[string]struct {
	status int
	msg    string
}{
	"AccessDenied":                        {http.StatusForbidden, "Access Denied"},
	"AccessControlListNotSupported":       {http.StatusBadRequest, "The bucket does not allow ACLs."},
	"AccessForbidden":                     {http.StatusForbidden, "CORSResponse: This CORS request is not allowed."},
	"AuthorizationHeaderMalformed":        {http.StatusBadRequest, "The authorization header is malformed."},
	"AuthorizationQueryParametersError":   {http.StatusBadRequest, "Error parsing the X-Amz-Credential parameter."},
	"BadDigest":                           {http.StatusBadRequest, "The Content-MD5 or checksum you specified did not match what we received."},
	"BadRequest":                          {http.StatusBadRequest, "Bad Request"},
	"BucketAlreadyExists":                 {http.StatusConflict, "The requested bucket name is not available."},
	"BucketAlreadyOwnedByYou":             {http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."},
	"BucketNotEmpty":                      {http.StatusConflict, "The bucket you tried to delete is not empty."},
	"ConditionalRequestConflict":          {http.StatusConflict, "A conflicting operation occurred. Retry the request."},
	"EntityTooLarge":                      {http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed size."},
	"EntityTooSmall":                      {http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."},
	"ExpiredToken":                        {http.StatusBadRequest, "The provided token has expired."},
	"IncompleteBody":                      {http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."},
	"InternalError":                       {http.StatusInternalServerError, "We encountered an internal error. Please try again."},
	"InvalidAccessKeyId":                  {http.StatusForbidden, "The AWS access key ID you provided does not exist in our records."},
	"InvalidArgument":                     {http.StatusBadRequest, "Invalid Argument"},
	"InvalidBucketAclWithObjectOwnership": {http.StatusBadRequest, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"},
	"InvalidBucketName":                   {http.StatusBadRequest, "The specified bucket is not valid."},
	"InvalidDigest":                       {http.StatusBadRequest, "The Content-MD5 or checksum you specified is not valid."},
	"InvalidObjectState":                  {http.StatusForbidden, "The operation is not valid for the current state of the object."},
	"IncorrectNumberOfFilesInPostRequest": {http.StatusBadRequest, "POST requires exactly one file upload per request."},
	"InvalidPolicyDocument":               {http.StatusBadRequest, "The content of the form does not meet the conditions specified in the policy document."},
	"MalformedPOSTRequest":                {http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."},
	"MaxPostPreDataLengthExceededError":   {http.StatusBadRequest, "Your POST request fields preceding the upload file were too large."},
	"InvalidPart":                         {http.StatusBadRequest, "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag."},
	"InvalidPartOrder":                    {http.StatusBadRequest, "The list of parts was not in ascending order. Parts must be ordered by part number."},
	"InvalidRange":                        {http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable"},
	"InvalidRequest":                      {http.StatusBadRequest, "Invalid Request"},
	"InvalidStorageClass":                 {http.StatusBadRequest, "The storage class you specified is not valid."},
	"InvalidTag":                          {http.StatusBadRequest, "The tag provided was not a valid tag."},
	"KeyTooLongError":                     {http.StatusBadRequest, "Your key is too long."},
	"MalformedACLError":                   {http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."},
	"MalformedPolicy":                     {http.StatusBadRequest, "Policies must be valid JSON and the first byte must be '{'."},
	"MalformedXML":                        {http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."},
	"MalformedTrailerError":               {http.StatusBadRequest, "The request contained trailing data that was not well-formed or did not conform to our published schema."},
	"MaxMessageLengthExceeded":            {http.StatusBadRequest, "Your request was too big."},
	"MetadataTooLarge":                    {http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."},
	"MethodNotAllowed":                    {http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."},
	"MissingContentLength":                {http.StatusLengthRequired, "You must provide the Content-Length HTTP header."},
	"MissingRequestBodyError":             {http.StatusBadRequest, "Request Body is empty"},
	"MissingSecurityHeader":               {http.StatusBadRequest, "Your request is missing a required header."},
	"NoSuchBucket":                        {http.StatusNotFound, "The specified bucket does not exist."},
	"NoSuchKey":                           {http.StatusNotFound, "The specified key does not exist."},
	"NoSuchVersion":                       {http.StatusNotFound, "The specified version does not exist."},
	"NoSuchTagSet":                        {http.StatusNotFound, "The TagSet does not exist."},
	"NoSuchUpload":                        {http.StatusNotFound, "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed."},
	"NotImplemented":                      {http.StatusNotImplemented, "A header you provided implies functionality that is not implemented."},
	"ObjectConflict":                      {http.StatusConflict, "The key conflicts with an existing object or directory of the namespace."},
	"PreconditionFailed":                  {http.StatusPreconditionFailed, "At least one of the pre-conditions you specified did not hold."},
	"RequestTimeTooSkewed":                {http.StatusForbidden, "The difference between the request time and the server's time is too large."},
	"ServiceUnavailable":                  {http.StatusServiceUnavailable, "Please reduce your request rate."},
	"SignatureDoesNotMatch":               {http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."},
	"SlowDown":                            {http.StatusServiceUnavailable, "Please reduce your request rate."},
	"InsufficientStorage":                 {http.StatusInsufficientStorage, "The storage is full."},
	"TooManyParts":                        {http.StatusBadRequest, "An upload may have at most 10000 parts."},
	"UnexpectedContent":                   {http.StatusBadRequest, "This request does not support content."},
	"XAmzContentSHA256Mismatch":           {http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."},
	"InvalidChunkSizeError":               {http.StatusBadRequest, "Only the last chunk is allowed to have a size less than 8192 bytes"},
	"NotModified":                         {http.StatusNotModified, "Not Modified"},

	// A CreateBucket for a region the gateway does not serve.
	"IllegalLocationConstraintException": {http.StatusBadRequest, "The location constraint is incompatible for the region specific endpoint this request was sent to."},

	// What AWS answers for a bucket configuration the bucket does not have.
	"NoSuchBucketPolicy":                             {http.StatusNotFound, noConfig},
	"NoSuchCORSConfiguration":                        {http.StatusNotFound, noConfig},
	"NoSuchLifecycleConfiguration":                   {http.StatusNotFound, noConfig},
	"NoSuchWebsiteConfiguration":                     {http.StatusNotFound, noConfig},
	"NoSuchPublicAccessBlockConfiguration":           {http.StatusNotFound, noConfig},
	"ObjectLockConfigurationNotFoundError":           {http.StatusNotFound, noConfig},
	"OwnershipControlsNotFoundError":                 {http.StatusNotFound, noConfig},
	"ReplicationConfigurationNotFoundError":          {http.StatusNotFound, noConfig},
	"ServerSideEncryptionConfigurationNotFoundError": {http.StatusNotFound, noConfig},
}

const noConfig = "The bucket has no such configuration."

// errCode builds the APIError for code, with msg replacing the default
// message when non-empty.
func errCode(code string, msg string, args ...any) *APIError {
	e, ok := s3Errors[code]
	if !ok {
		e = s3Errors["InternalError"]
	}
	m := e.msg
	if msg != "" {
		m = fmt.Sprintf(msg, args...)
	}
	return &APIError{Code: code, Status: e.status, Message: m}
}

// toAPIError maps any error to the S3 error a client should see: APIErrors
// pass through; errnos from the namespace read as errnoTable's general row;
// anything else is an InternalError (its text is logged, not sent).
func toAPIError(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errCode("SlowDown", "The request did not complete in time.")
	}
	if a, ok := errnoTable[anyCall][errnoOf(err)]; ok {
		return a.apiError("")
	}
	return errCode("InternalError", "")
}

// errnoScope is what a namespace call was asked for. S3 answers some errnos
// by it: a missing entry is NoSuchKey for a key, NoSuchBucket for a bucket,
// NoSuchUpload for a multipart upload.
type errnoScope uint8

const (
	anyCall      errnoScope = iota // the general row; an errno another scope's row lacks reads as here
	keyRead                        // resolving the key of a GET, HEAD, copy or rename source
	keyDelete                      // resolving the directory of a key to delete
	keyParents                     // creating the directories above a key
	keyWrite                       // renaming new data into a key
	keyWriteNew                    // the same when the key must not exist (If-None-Match: *)
	keyRename                      // RenameObject, for what publishing left an errno
	bucketLookup                   // finding a bucket
	bucketCreate                   // CreateBucket
	bucketDelete                   // DeleteBucket
	uploadLookup                   // finding, reading or removing a multipart upload
)

// errnoAnswer is the S3 error an errno reads as: its code, and a message
// replacing the code's default when not empty (a %q in it is the key).
type errnoAnswer struct{ code, msg string }

func (a errnoAnswer) apiError(key string) *APIError {
	switch {
	case a.msg == "":
		return errCode(a.code, "")
	case strings.Contains(a.msg, "%q"):
		return errCode(a.code, a.msg, key)
	}
	return errCode(a.code, "%s", a.msg)
}

// errnoTable is the one map from namespace errnos to S3 errors, by scope.
var errnoTable = map[errnoScope]map[syscall.Errno]errnoAnswer{
	anyCall: {
		syscall.ENOENT:       {"NoSuchKey", ""},
		syscall.EEXIST:       {"PreconditionFailed", ""},
		syscall.ECANCELED:    {"PreconditionFailed", ""},
		syscall.ENOTDIR:      {"ObjectConflict", "A parent of the key is an object (a file), so the key cannot be created below it."},
		syscall.EISDIR:       {"ObjectConflict", "The key names a directory that holds other objects."},
		syscall.ENOTEMPTY:    {"ObjectConflict", "The key names a directory that is not empty."},
		syscall.ENAMETOOLONG: {"KeyTooLongError", ""},
		syscall.EINVAL:       {"InvalidArgument", ""},
		syscall.EACCES:       {"AccessDenied", ""},
		syscall.EPERM:        {"AccessDenied", ""},
		syscall.EROFS:        {"AccessDenied", "The key is inside a snapshot, which is read-only (flyfs admin snapshot delete removes a snapshot)."},
		syscall.EFBIG:        {"EntityTooLarge", ""},
		syscall.ENOSPC:       {"InsufficientStorage", "A storage disk of the bucket's chains is full: writes fail until space returns (files removed and collected, or the disk grown); reads go on."},
		syscall.EDQUOT:       {"ServiceUnavailable", "The file system is out of space."},
	},
	keyRead: {
		// A path through a file or a symlink loop holds no key either.
		syscall.ENOENT:  {"NoSuchKey", ""},
		syscall.ENOTDIR: {"NoSuchKey", ""},
		syscall.ELOOP:   {"NoSuchKey", ""},
	},
	keyDelete: {
		syscall.ENOENT:  {"NoSuchKey", ""},
		syscall.ENOTDIR: {"NoSuchKey", ""},
	},
	keyParents: {
		syscall.ENOTDIR: {"ObjectConflict", "A parent of the key %q is an object (a file), so the key cannot be created below it."},
		syscall.EEXIST:  {"ObjectConflict", "A parent of the key %q is an object (a file), so the key cannot be created below it."},
	},
	keyWrite: {
		syscall.EEXIST:    {"ObjectConflict", "The key %q names a directory that holds other objects."},
		syscall.EISDIR:    {"ObjectConflict", "The key %q names a directory that holds other objects; delete them first."},
		syscall.ENOTEMPTY: {"ObjectConflict", "The key %q names a directory that holds other objects; delete them first."},
		syscall.ENOTDIR:   {"ObjectConflict", "The key %q names an object (a file), not a directory."},
	},
	keyWriteNew: {
		syscall.EEXIST:    {"PreconditionFailed", ""},
		syscall.EISDIR:    {"ObjectConflict", "The key %q names a directory that holds other objects; delete them first."},
		syscall.ENOTEMPTY: {"ObjectConflict", "The key %q names a directory that holds other objects; delete them first."},
		syscall.ENOTDIR:   {"ObjectConflict", "The key %q names an object (a file), not a directory."},
	},
	keyRename: {
		syscall.EINVAL: {"InvalidArgument", "A directory cannot be renamed into itself."},
	},
	bucketLookup: {
		syscall.ENOENT: {"NoSuchBucket", ""},
	},
	bucketCreate: {
		syscall.EEXIST: {"BucketAlreadyOwnedByYou", ""},
	},
	bucketDelete: {
		syscall.ENOENT:    {"NoSuchBucket", ""},
		syscall.ENOTEMPTY: {"BucketNotEmpty", ""},
		syscall.EEXIST:    {"BucketNotEmpty", ""},
	},
	uploadLookup: {
		syscall.ENOENT:  {"NoSuchUpload", ""},
		syscall.ENODATA: {"NoSuchUpload", ""},
	},
}

// nsError reads a namespace error in scope: an errno the scope's row holds
// becomes that S3 error (key is the key its message may name); any other
// error returns as it is, still an errno for callers that decide on one, and
// toAPIError answers it from the general row.
func nsError(err error, scope errnoScope, key string) error {
	if a, ok := errnoTable[scope][errnoOf(err)]; ok {
		return a.apiError(key)
	}
	return err
}

// errorBody is the XML shape of every S3 error response.
type errorBody struct {
	XMLName      xml.Name `xml:"Error"`
	Code         string   `xml:"Code"`
	Message      string   `xml:"Message"`
	Method       string   `xml:"Method,omitempty"`
	ResourceType string   `xml:"ResourceType,omitempty"`
	Key          string   `xml:"Key,omitempty"`
	Bucket       string   `xml:"BucketName,omitempty"`
	Resource     string   `xml:"Resource,omitempty"`
	RequestID    string   `xml:"RequestId"`
	HostID       string   `xml:"HostId"`
}

// errnoOf extracts the POSIX errno of a namespace error, whether it arrives
// as a syscall.Errno (wrapped in a path error) or still as a wire error.
// It is 0 only for nil: an error that carries no errno (a lost connection,
// a timeout, a metad that did not answer) is errNoErrno, which no decision
// on an errno takes for success or for a known outcome.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) && e != 0 {
		return e
	}
	if e := client.Errno(err); e != 0 { // the namespace's errnos, and ENOSPC of a full disk
		return e
	}
	return errNoErrno
}

// errNoErrno is errnoOf's answer for an error without an errno; no table
// row has it, so such an error stays itself (an InternalError, or SlowDown
// for an expired deadline).
const errNoErrno = syscall.Errno(^uint32(0) >> 1)
