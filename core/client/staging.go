package client

// S3StagingRoot is the top-level directory where the S3 gateway keeps
// uploads in flight (whole objects being written, multipart parts). Its
// name is not a valid bucket name, so no bucket collides with it; front ends
// that list the namespace leave it out.
const S3StagingRoot = ".flyfs-s3"
