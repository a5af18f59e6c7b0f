# The enrichd image: the static binaries (CGO_ENABLED=0) of "make dist" on
# an empty base. Build it with "make image" (podman or docker), which runs
# "make dist" and puts in the build context (.cache/image/) the binaries
# of IMAGE_ARCH as enrichd and lut, the CA certificates, LICENSE and
# third_party.txt.
# The image holds /usr/bin/enrichd, /usr/bin/lut, the CA certificates of
# the build host (for tables from https:// and s3:// stores, and Kafka over
# TLS), the licences, and runs as an unprivileged user (65532). Mount the
# configuration at /etc/enrichd/enrichd.yaml and the tables where
# tables.path says (examples/k8s/).
FROM scratch
COPY enrichd lut /usr/bin/
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY LICENSE /usr/share/doc/lutkit/LICENSE
COPY third_party.txt /usr/share/doc/lutkit/third_party_licenses.txt
USER 65532:65532
# syslog (TCP and UDP), and /metrics, /healthz, /readyz and the lookup API.
EXPOSE 5514/tcp 5514/udp 9514/tcp
ENTRYPOINT ["/usr/bin/enrichd"]
CMD ["--config", "/etc/enrichd/enrichd.yaml"]
