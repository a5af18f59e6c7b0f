//go:build race

package iptable

const raceEnabled = true
