package serve

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/lutkit/lutkit/enrichd/internal/listen"
)

// Auth is who may use an endpoint: the holders of a bearer token, and
// HTTPS clients whose verified certificate has a name in a list (see
// listen.Allowed). With neither, Open reports true.
type Auth struct {
	Token   string
	Clients []string
}

// Open reports whether the endpoint needs no authentication.
func (a Auth) Open() bool { return a.Token == "" && len(a.Clients) == 0 }

// Allows reports whether the request may use the endpoint.
func (a Auth) Allows(r *http.Request) bool {
	if a.Open() {
		return true
	}
	if len(a.Clients) > 0 && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 &&
		listen.Allowed(r.TLS.PeerCertificates[0], a.Clients) {
		return true
	}
	if a.Token == "" {
		return false
	}
	v := r.Header["Authorization"]
	if len(v) != 1 || len(v[0]) < 7 || !strings.EqualFold(v[0][:7], "bearer ") {
		return false
	}
	return subtle.ConstantTimeCompare(sbytes(strings.TrimSpace(v[0][7:])), sbytes(a.Token)) == 1
}

// Guard serves h to the requests a allows, and 401 to the others.
func (a Auth) Guard(h http.Handler) http.Handler {
	if a.Open() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.Allows(r) {
			unauthorized(w, a)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// unauthorized answers 401, saying what the endpoint takes.
func unauthorized(w http.ResponseWriter, a Auth) {
	msg := "missing or wrong bearer token"
	switch {
	case a.Token == "":
		msg = "a client certificate the endpoint allows is required"
	case len(a.Clients) > 0:
		msg = "missing or wrong bearer token, and no client certificate the endpoint allows"
	}
	if a.Token != "" {
		w.Header()["Www-Authenticate"] = []string{`Bearer realm="enrichd"`}
	}
	httpError(w, http.StatusUnauthorized, msg)
}
