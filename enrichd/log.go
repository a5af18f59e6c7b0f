package enrichd

import (
	"io"
	"log/slog"
	"time"
)

// NewLogger returns the daemon's logger, writing to w at level and above
// in format (json or text). Durations are written as seconds, a float
// under the key with "_seconds" appended (retry_in: 2s is
// retry_in_seconds=2), so that every duration of the logs reads the same.
func NewLogger(w io.Writer, level LogLevel, format LogFormat) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationSeconds}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// durationSeconds writes a duration attribute as float seconds.
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"_seconds", a.Value.Duration().Seconds())
	}
	return a
}

// seconds is d as float seconds, for log attributes named *_seconds.
func seconds(d time.Duration) float64 { return d.Seconds() }
