// Package kafkae2e tests enrichd end to end between Kafka topics, with
// real components only: an in-process kfake cluster of three brokers
// over TCP, the enrichd binary run as processes, the customers .lut table
// and the real GeoLite2 city .mmdb.
//
// TestMillion streams 1,000,000 events through one enrichd; TestFleetKill
// kills one of three enrichd processes of a consumer group mid-stream;
// TestFleetRebalance has a member join and another leave on SIGTERM
// mid-stream; TestBrokerDown makes a broker stop answering for a few
// seconds; TestClusterOutage stops all three brokers for 2 to 15 seconds
// and checks the group's committed offsets and enrichd's lag metric
// against the brokers. Each checks that every event arrives enriched, and
// counts duplicates against the bound max_uncommitted sets. BenchmarkKafkaToKafka measures
// the throughput, and the events per CPU-second of the enrichd process;
// BenchmarkKgoRelay measures the same of kgorelay, a relay between the
// topics on the same Kafka client that does nothing else.
//
// The package holds only tests. It runs without the race detector (the
// Makefile's NORACE_PKGS); enrichd's own Kafka tests run the same code
// with it.
package kafkae2e
