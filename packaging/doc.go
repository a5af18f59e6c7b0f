// Package packaging holds the Debian package of lutkit: nfpm.yaml (built by
// "make package"), the default /etc/enrichd/enrichd.yaml, the maintainer
// scripts, and a test that builds the package, installs it with dpkg,
// checks the installed programs and configuration, and purges it; and a
// test that builds the container image of the Dockerfile with podman.
package packaging
