package tables

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// RemoteOptions configure a set opened from a remote manifest
// (https://HOST/PREFIX/MANIFEST.json, http://..., s3://BUCKET/PREFIX/).
// See the package documentation.
type RemoteOptions struct {
	// CacheDir is the local cache of verified artifacts and versions
	// (required).
	CacheDir string
	// Keep is how many versions before the current one the cache keeps
	// (default 2).
	Keep int
	// MaxArtifactSize rejects a version naming a larger artifact (default
	// 8 GiB); MaxManifestSize is the limit of the manifest (16 MiB).
	MaxArtifactSize int64
	MaxManifestSize int64
	// Timeout bounds connecting, waiting for an answer, fetching the
	// manifest, and every wait for data during a download (default 30s).
	Timeout time.Duration
	// Retries is how many times a failed request is tried again within a
	// check, after a backoff with jitter starting at RetryBackoff (default
	// 3 and 500ms). Authentication failures (401, 403), a missing object,
	// a bad digest or structure are not retried before the next check.
	Retries      int
	RetryBackoff time.Duration

	// Token is sent as "Authorization: Bearer TOKEN" (HTTP); TokenFile is
	// read on every request instead. Neither is ever logged.
	Token     string
	TokenFile string
	// Headers are extra request headers (HTTP), name and value.
	Headers [][2]string
	// CAFile is a PEM bundle of the certificate authorities to trust
	// instead of the system's; CertFile and KeyFile a client certificate
	// (mutual TLS).
	CAFile, CertFile, KeyFile string

	// S3Endpoint is the S3-compatible store's host:port or URL
	// (http://host:port without TLS); "" is AWS (or AWS_ENDPOINT_URL_S3).
	// S3PathStyle addresses the bucket in the path rather than the host
	// name. S3Region "" reads AWS_REGION. Credentials come from the AWS
	// environment, the shared credentials file, or the instance role.
	S3Endpoint  string
	S3PathStyle bool
	S3Region    string
}

// DefaultRemotePollInterval is how often a remote set checks its store
// when Options.PollInterval is zero.
const DefaultRemotePollInterval = 30 * time.Second

func (o *RemoteOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 30 * time.Second
}

func (o *RemoteOptions) keep() int {
	if o.Keep > 0 {
		return o.Keep
	}
	return 2
}

func (o *RemoteOptions) maxArtifact() int64 {
	if o.MaxArtifactSize > 0 {
		return o.MaxArtifactSize
	}
	return 8 << 30
}

func (o *RemoteOptions) maxManifest() int64 {
	if o.MaxManifestSize > 0 {
		return o.MaxManifestSize
	}
	return 16 << 20
}

func (o *RemoteOptions) retries() int {
	if o.Retries > 0 {
		return o.Retries
	}
	if o.Retries < 0 {
		return 0
	}
	return 3
}

func (o *RemoteOptions) backoff(attempt int) time.Duration {
	base := o.RetryBackoff
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	d := base << min(attempt, 6)
	// Full jitter: nodes that failed together do not retry together.
	return d/2 + rand.N(d/2+1)
}

// RemoteStats describe a remote set's source, for monitoring.
type RemoteStats struct {
	// Source is the manifest's location (no credentials).
	Source string
	// Version is the SHA256 of the published manifest now served;
	// Generated its generation time.
	Version   string
	Generated time.Time
	// Stale is true when the last check did not succeed: the node serves
	// the version it has (from its cache, at start), which may not be the
	// newest. StaleReason says why.
	Stale       bool
	StaleReason string
	// LastCheck is the last check; LastSuccess the last successful one
	// (zero if none, also across restarts: it is kept in the cache).
	LastCheck   time.Time
	LastSuccess time.Time
	// Checks counts checks of the manifest; NotModified those answered
	// "not modified" (no body transferred).
	Checks      uint64
	NotModified uint64
	// Downloads counts artifacts downloaded (or rebuilt from a delta)
	// and verified; Bytes the bytes received (artifacts, deltas and
	// manifests).
	Downloads uint64
	Bytes     uint64
	// DeltasApplied counts artifacts rebuilt from a delta and the base in
	// the cache, and verified against the manifest's digest;
	// DeltaFallbacks the deltas not used, by reason (Delta* constants):
	// the full artifact was downloaded instead.
	DeltasApplied  uint64
	DeltaFallbacks map[string]uint64
	// Failures counts failed checks and downloads by reason (Reason*
	// constants).
	Failures map[string]uint64
	// DownloadsByFile counts verified downloads by artifact file name,
	// for the versions the cache keeps.
	DownloadsByFile map[string]uint64
}

// remote keeps a Set's cache in step with its store.
type remote struct {
	st  store
	o   *RemoteOptions
	log *slog.Logger

	// state and pending are owned by the checking goroutine (check runs
	// under the set's loadMu, or before the set exists).
	state   remoteState
	pending map[string]bool

	// rejected is the last version rejected for good (an artifact bad,
	// missing or over the size limit), owned like state; seen is the
	// digest of the last manifest fetched. The rejection is forgotten
	// when another manifest is fetched and when a version installs, so
	// that a version put right and published again is tried at once.
	rejected rejection
	seen     string

	// damaged lists the current version's cached manifests found damaged
	// by the last check and not yet fetched again, owned like state.
	damaged []metaDamage

	// lock is the process's hold on the cache directory, shared with the
	// other sets of the process on it; installs is the count of its
	// installs this remote's state reflects.
	lock     *cacheLock
	installs uint64
	closed   bool

	mu    sync.Mutex
	stats RemoteStats
}

// rejection remembers a version rejected for good, so that one bad
// publish does not make every node download its artifacts again at every
// poll: the checks that find the same manifest again are answered with
// the same error and download nothing, 1, 3, 7 ... up to 63 of them in a
// row, doubling with every rejection of that version. Then it is tried
// again, so an artifact put right in the store under the same manifest is
// picked up. Another manifest in between (or an install) ends it.
type rejection struct {
	digest string
	err    error
	times  int
	skip   int
}

// reject records err as the rejection of the version digest when its
// reason is about the version itself (rejectsForGood), and returns err.
// A failure of the node's disk or of its credentials is not: the next
// check tries again.
func (r *remote) reject(digest string, err error) error {
	if reason, _ := reasonOf(err); !rejectsForGood(reason) {
		return err
	}
	if r.rejected.digest != digest {
		r.rejected = rejection{digest: digest}
	}
	r.rejected.times++
	r.rejected.err = err
	r.rejected.skip = 1<<min(r.rejected.times, 6) - 1 // 1, 3, 7 ... 63
	return err
}

// rejectsForGood reports whether a failure of that reason is the
// version's own fault (an artifact bad, missing or too big), so that
// checking the same manifest again would fail the same way.
func rejectsForGood(reason string) bool {
	switch reason {
	case ReasonDigest, ReasonStructure, ReasonSize, ReasonSizeLimit, ReasonNotFound:
		return true
	}
	return false
}

func newRemote(path string, o *RemoteOptions, log *slog.Logger) (*remote, error) {
	if o.CacheDir == "" {
		return nil, fmt.Errorf("tables path %s: a remote set needs a cache directory (tables.cache_dir)", redactURL(path))
	}
	st, err := newStore(path, o)
	if err != nil {
		return nil, err
	}
	if err := prepareCache(o.CacheDir); err != nil {
		return nil, err
	}
	lock, err := lockCache(o.CacheDir)
	if err != nil {
		return nil, err
	}
	r := &remote{st: st, o: o, log: log, pending: map[string]bool{}, lock: lock}
	r.stats.Source = st.location()
	r.stats.Failures = map[string]uint64{}
	r.stats.DownloadsByFile = map[string]uint64{}
	r.stats.DeltaFallbacks = map[string]uint64{}
	lock.mu.Lock()
	defer lock.mu.Unlock()
	r.removeLeftovers()
	r.readState()
	return r, nil
}

// readState takes the cache's state.json as this remote's state. Called
// with the cache lock's mu held.
func (r *remote) readState() {
	r.installs = r.lock.installs
	s, err := readState(r.o.CacheDir)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Source != r.st.location() {
		// A cache filled from another source: its artifacts may serve
		// this one (they are content-addressed), but its version is not
		// this source's and is never served.
		r.state = remoteState{Versions: s.Versions}
		return
	}
	r.state = s
	r.stats.LastSuccess = s.CheckedAt
	r.stats.Version = s.Current
	if len(s.Versions) > 0 {
		r.stats.Generated = s.Versions[0].Generated
	}
}

// close gives up the remote's share of the cache directory's lock.
func (r *remote) close() {
	if r.closed {
		return
	}
	r.closed = true
	r.lock.release()
}

// cachedManifest is the cache's current manifest, or "" if it has none
// or it is damaged.
func (r *remote) cachedManifest() string {
	if r.state.Current == "" || r.manifestDamaged() {
		return ""
	}
	return filepath.Join(r.o.CacheDir, ManifestName)
}

func (r *remote) fail(reason string) {
	r.mu.Lock()
	r.stats.Failures[reason]++
	r.mu.Unlock()
}

func (r *remote) addBytes(n int64) {
	r.mu.Lock()
	r.stats.Bytes += uint64(n)
	r.mu.Unlock()
}

// check fetches the manifest (conditionally) and, when it changed, every
// artifact the cache lacks, verifies them all and installs the version.
// It reports whether the cache's version changed (installed by this
// check, or by another set of the process on the same cache since this
// one's last check), also with an error; ctx aborts it. The checks of
// the sets sharing the cache run one at a time.
func (r *remote) check(ctx context.Context) (installed bool, err error) {
	r.lock.mu.Lock()
	defer r.lock.mu.Unlock()
	moved := false
	if r.installs != r.lock.installs {
		before := r.state.Current
		r.readState()
		moved = r.state.Current != before
	}
	installed, err = r.checkStore(ctx)
	return installed || moved, err
}

// checkStore is check, with the cache's lock held.
func (r *remote) checkStore(ctx context.Context) (installed bool, err error) {
	now := time.Now()
	r.mu.Lock()
	r.stats.Checks++
	r.stats.LastCheck = now
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.stats.Stale, r.stats.StaleReason = true, err.Error()
			return
		}
		r.stats.Stale, r.stats.StaleReason = false, ""
		r.stats.LastSuccess = now
	}()
	// The current version's cached manifests are checked first: a
	// damaged one is fetched again, so the manifest is asked for whole,
	// not conditionally.
	r.noteMeta(r.checkMeta())
	cond := r.state.Validator
	if len(r.damaged) > 0 {
		cond = validator{}
	}
	var (
		raw []byte
		v   validator
	)
	err = r.retry(ctx, "the manifest", func() error {
		var e error
		raw, v, e = r.st.manifest(ctx, cond, r.o.maxManifest())
		return e
	})
	if errors.Is(err, errNotModified) {
		r.mu.Lock()
		r.stats.NotModified++
		r.mu.Unlock()
		r.state.CheckedAt = now
		// Best effort: the age of the cache across restarts.
		_ = writeJSON(filepath.Join(r.o.CacheDir, cacheState), &r.state)
		return false, nil
	}
	if err != nil {
		return false, r.metaErr(fmt.Errorf("%s: %w", r.st.location(), err))
	}
	r.addBytes(int64(len(raw)))
	digest := fsutil.BytesSHA256(raw)
	if digest != r.seen {
		r.seen, r.rejected = digest, rejection{}
	}
	m, err := ParseManifest(r.st.location(), raw)
	if err != nil {
		r.fail(ReasonManifest)
		return false, r.metaErr(&fetchError{reason: ReasonManifest, permanent: true, err: err})
	}
	repairing := digest == r.state.Current && len(r.damaged) > 0
	if digest == r.state.Current && !repairing {
		// The same version (a new validator, or a cache from before
		// a restart): nothing to download.
		r.state.Validator, r.state.CheckedAt = v, now
		_ = writeJSON(filepath.Join(r.o.CacheDir, cacheState), &r.state)
		return false, nil
	}
	if r.rejected.digest == digest && r.rejected.skip > 0 {
		r.rejected.skip--
		return false, r.metaErr(r.rejected.err)
	}
	// Every artifact is checked before any download: a version that
	// cannot be served is rejected without transferring anything.
	for i := range m.Tables {
		t := &m.Tables[i]
		if t.Size > r.o.maxArtifact() {
			r.fail(ReasonSizeLimit)
			return false, r.reject(digest, ferr(ReasonSizeLimit, true, "%s: version %.16s rejected: table %s: artifact %s is %d bytes, over the limit of %d",
				r.st.location(), digest, t.Name, t.File, t.Size, r.o.maxArtifact()))
		}
	}
	for i := range m.Tables {
		t := &m.Tables[i]
		if err := r.fetchArtifact(ctx, t); err != nil {
			what := "rejected"
			if reason, _ := reasonOf(err); !rejectsForGood(reason) {
				what = "not fetched"
			}
			return false, r.metaErr(r.reject(digest, fmt.Errorf("%s: version %.16s %s: table %s: artifact %s: %w", r.st.location(), digest, what, t.Name, t.File, err)))
		}
	}
	if err := r.install(m, raw, digest, v, now); err != nil {
		r.fail(ReasonCache)
		return false, r.metaErr(fmt.Errorf("tables cache %s: %w", r.o.CacheDir, err))
	}
	r.rejected = rejection{}
	r.mu.Lock()
	r.stats.Version, r.stats.Generated = digest, m.Generated
	r.mu.Unlock()
	if repairing {
		for _, d := range r.damaged {
			r.log.Info("tables: cache: the damaged cached manifest was fetched again from the store", "source", r.st.location(),
				"version", digest, "file", d.file)
		}
		r.damaged = nil
		return true, nil
	}
	r.damaged = nil
	r.log.Info("tables: new version fetched", "source", r.st.location(), "version", digest, "tables", len(m.Tables))
	return true, nil
}

// retry runs op until it succeeds, fails permanently, or the retries are
// spent, counting every failure by reason and waiting a backoff with
// jitter between tries.
func (r *remote) retry(ctx context.Context, what string, op func() error) error {
	var err error
	for attempt := 0; ; attempt++ {
		err = op()
		if err == nil || errors.Is(err, errNotModified) {
			return err
		}
		reason, permanent := reasonOf(err)
		r.fail(reason)
		if permanent || attempt >= r.o.retries() || ctx.Err() != nil {
			return err
		}
		wait := r.o.backoff(attempt)
		r.log.Debug("tables: retrying", "what", what, "reason", err.Error(), "in", wait)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// Stats returns a copy of the counters.
func (r *remote) Stats() RemoteStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stats
	st.Failures = make(map[string]uint64, len(r.stats.Failures))
	for k, v := range r.stats.Failures {
		st.Failures[k] = v
	}
	st.DeltaFallbacks = make(map[string]uint64, len(r.stats.DeltaFallbacks))
	for k, v := range r.stats.DeltaFallbacks {
		st.DeltaFallbacks[k] = v
	}
	st.DownloadsByFile = make(map[string]uint64, len(r.stats.DownloadsByFile))
	for k, v := range r.stats.DownloadsByFile {
		st.DownloadsByFile[k] = v
	}
	return st
}
