# Calls Dalli the way logstash-filter-memcached 1.2.x does
# (lib/logstash/filters/memcached.rb): register builds the client with
# Dalli::Client.new(hosts, options).tap { |client| client.alive! }, where
# options are {expires_in: ttl} (ttl defaults to 0) plus {namespace: ns}
# when the namespace option is set and not empty; filter then calls
# cache.get_multi(keys) once per event with the keys of its get option.
#
# The filter's set option runs, per event,
# cache.multi { cache.set(key, value) } (do_set): an event given as
# "set:KEY=VALUE" does that, one given as "plainset:KEY=VALUE" calls
# cache.set(key, value) alone.
#
# Usage: ruby logstash_filter.rb HOST:PORT NAMESPACE EVENTS...
# NAMESPACE "" means none. Each argument "--" starts a new event. Prints
# the protocol class Dalli talks to the server with, then one line per
# event: the hits of get_multi as KEY=LENGTH:SHA256(VALUE), sorted by key,
# or whether the set returned or raised.
require 'dalli'
require 'digest'
require 'logger'

Dalli.logger = Logger.new($stderr)
Dalli.logger.level = Logger::WARN

host, namespace, *args = ARGV
options = { expires_in: 0 }
options[:namespace] = namespace unless namespace.nil? || namespace.empty?
cache = Dalli::Client.new([host].map(&:to_s), options).tap { |client| client.alive! }

events = args.slice_when { |a, _| a == '--' }.map { |ev| ev.reject { |k| k == '--' } }
servers = cache.instance_variable_get(:@ring).servers
puts "protocol #{servers.map { |s| s.class.name }.uniq.join(',')}"
events.each_with_index do |keys, i|
  kind, kv = keys.first.split(':', 2)
  if %w[set plainset].include?(kind)
    key, value = kv.split('=', 2)
    begin
      kind == 'set' ? cache.multi { cache.set(key, value) } : cache.set(key, value)
      puts "event #{i} #{kind} returned"
    rescue StandardError => e
      puts "event #{i} #{kind} raised #{e.class}: #{e.message}"
    end
    next
  end
  hits = cache.get_multi(keys)
  puts "event #{i} " + hits.sort.map { |k, v| "#{k}=#{v.bytesize}:#{Digest::SHA256.hexdigest(v)}" }.join(' ')
end
