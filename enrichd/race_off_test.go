//go:build !race

package enrichd

const raceEnabled = false
