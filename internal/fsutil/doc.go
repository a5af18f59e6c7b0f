// Package fsutil holds the file-system steps that the compilers, the
// table-set builder and the live set take the same way: writing a file
// atomically (WriteFile), putting a finished temporary file in place the
// same way (MoveFile), making a rename durable (SyncDir), opening a
// table or a manifest only if it is a regular file (OpenRegular,
// ReadRegular), hashing a file for a manifest (FileSHA256), naming a
// failed path only once (UnwrapPath), and locking a directory for one
// process at a time (Lock: a build's output, a tables cache, a queue).
package fsutil
