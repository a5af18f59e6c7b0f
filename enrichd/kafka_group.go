package enrichd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkaGroup is a Kafka input's membership of its consumer group, in the
// group protocol Kafka's own consumer speaks (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup; the "range" and "roundrobin" assignors, computed
// by the leader).
//
// A generation lasts until the coordinator says otherwise: a heartbeat
// answered "rebalance in progress" ends it after the input committed what
// it delivered (the coordinator still takes that commit); "unknown
// member" or "illegal generation" end it at once. A heartbeat that gets
// no answer (the brokers are down) is retried with backoff, and the
// generation goes on: when the brokers return before the session timeout,
// nothing was rebalanced, the partitions never stopped being this
// member's, and the delivered offsets are committed at once. Only after
// session_timeout without an answer does the input give its partitions
// up, as the coordinator does, and join again when the brokers return.
type kafkaGroup struct {
	cl                            *kafka.Client
	id                            string
	topics                        []string
	session, rebalance, heartbeat time.Duration
	log                           *slog.Logger

	// assign starts fetching a generation's partitions; revoke stops
	// it, committing first when commit is set.
	assign func(g *generation)
	revoke func(g *generation, commit bool)

	begun    chan struct{} // a generation began
	refused  chan refusal  // a commit was refused: the generation may be over
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	draining atomic.Bool // shutting down: join no more

	joins, failures atomic.Uint64
	joinStreak      streak
	beatStreak      streak

	mu     sync.Mutex
	cur    *generation // nil between generations
	prev   *generation // the last generation, current or ended
	member string      // the member ID the coordinator gave, if any
	coord  net.Addr    // the group coordinator, once found (heartbeats)
}

// generation is one generation of the group as this member saw it.
type generation struct {
	id     int
	member string
	leader bool
	parts  []topicPart // assigned to this member, sorted
	own    map[topicPart]bool
	// committed is the group's committed offset of each assigned
	// partition when the generation began (-1: none).
	committed map[topicPart]int64
	// counts is the partition count of each topic the leader assigned.
	counts map[string]int
}

func (g *generation) owns(tp topicPart) bool { return g != nil && g.own[tp] }

// partitionWatchInterval is how often the leader checks the topics'
// partition counts, to rebalance when partitions are added.
const partitionWatchInterval = 5 * time.Second

// groupEnd says why a generation ended.
type groupEnd int

const (
	endStop      groupEnd = iota // the input stops
	endRebalance                 // the coordinator rebalances: commit, then join again
	endLost                      // the generation is gone: join again
	endUnknown                   // the coordinator forgot this member: join as a new one
)

func newKafkaGroup(cl *kafka.Client, kc KafkaInputConfig, log *slog.Logger) *kafkaGroup {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &kafkaGroup{
		cl: cl, id: kc.Group, topics: kc.Topics, log: log,
		session: kc.SessionTimeout, rebalance: kc.RebalanceTimeout, heartbeat: kc.HeartbeatInterval,
		begun: make(chan struct{}, 1), refused: make(chan refusal, 1), done: make(chan struct{}),
	}
	if g.session == 0 {
		g.session = 30 * time.Second
	}
	if g.rebalance == 0 {
		g.rebalance = 30 * time.Second
	}
	if g.heartbeat == 0 {
		g.heartbeat = 3 * time.Second
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g
}

func (g *kafkaGroup) current() *generation {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cur
}

// last returns the last generation, current or ended.
func (g *kafkaGroup) last() *generation {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.prev
}

func (g *kafkaGroup) setCurrent(gen *generation) {
	g.mu.Lock()
	g.cur = gen
	if gen != nil {
		g.prev = gen
	}
	g.mu.Unlock()
}

// commitRefused tells the membership that the coordinator refused a
// commit of the current generation with err (unknown member, illegal
// generation, rebalance in progress), which ends the generation as a
// heartbeat answered so would.
func (g *kafkaGroup) commitRefused(gen *generation, err error) {
	select {
	case g.refused <- refusal{gen.id, err}:
	default:
	}
}

// refusal is a commit of generation gen the coordinator refused.
type refusal struct {
	gen int
	err error
}

// run is the membership: join, heartbeat until the generation ends,
// join again, until stop.
func (g *kafkaGroup) run() {
	defer close(g.done)
	g.mu.Lock()
	member := g.member
	g.mu.Unlock()
	bo := backoff{min: 100 * time.Millisecond, max: time.Second}
	for g.ctx.Err() == nil {
		gen, m, err := g.join(member)
		member = m
		g.mu.Lock()
		g.member = member
		g.mu.Unlock()
		if err != nil {
			if g.ctx.Err() != nil {
				return
			}
			g.failures.Add(1)
			g.joinStreak.fail(g.log, "kafka: joining the consumer group failed; retrying", "group", g.id, "err", err)
			if !g.sleep(bo.next()) {
				return
			}
			continue
		}
		bo.reset()
		g.joinStreak.ok(g.log, "kafka: joined the consumer group again")
		g.joins.Add(1)
		g.log.Info("kafka: joined the consumer group", "group", g.id, "generation", gen.id,
			"member", gen.member, "leader", gen.leader, "partitions", len(gen.parts))
		g.setCurrent(gen)
		g.assign(gen)
		select {
		case g.begun <- struct{}{}:
		default:
		}
		end := g.heartbeats(gen)
		if end == endStop {
			return // the generation stays current for the last commit
		}
		if end == endRebalance && g.draining.Load() {
			// Shutting down: the coordinator takes this generation's
			// commits until the rebalance completes, and waits for this
			// member, which leaves once its last commit is done.
			<-g.ctx.Done()
			return
		}
		if end == endUnknown {
			member = ""
			g.mu.Lock()
			g.member = ""
			g.mu.Unlock()
		}
		g.revoke(gen, end == endRebalance)
		g.setCurrent(nil)
		if g.draining.Load() {
			<-g.ctx.Done() // shutting down: no new generation
			return
		}
	}
}

func (g *kafkaGroup) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// heartbeats keeps gen alive until it ends.
func (g *kafkaGroup) heartbeats(gen *generation) groupEnd {
	t := time.NewTimer(g.heartbeat)
	defer t.Stop()
	var watch <-chan time.Time
	if gen.leader {
		tk := time.NewTicker(partitionWatchInterval)
		defer tk.Stop()
		watch = tk.C
	}
	lastOK := time.Now()
	bo := backoff{min: 200 * time.Millisecond, max: time.Second}
	for {
		var err error
		select {
		case <-g.ctx.Done():
			return endStop
		case <-watch:
			if g.partitionsChanged(gen) {
				g.log.Info("kafka: the topics' partitions changed; rebalancing the group", "group", g.id)
				return endRebalance
			}
			continue
		case r := <-g.refused:
			if r.gen != gen.id {
				continue // of an earlier generation
			}
			err = r.err
		case <-t.C:
			err = g.beat(gen)
		}
		switch {
		case g.ctx.Err() != nil:
			return endStop
		case err == nil:
			lastOK = time.Now()
			bo.reset()
			g.beatStreak.ok(g.log, "kafka: the group coordinator answers again")
			t.Reset(g.heartbeat)
		case errors.Is(err, kafka.RebalanceInProgress):
			g.log.Info("kafka: the group is rebalancing", "group", g.id, "generation", gen.id)
			return endRebalance
		case errors.Is(err, kafka.UnknownMemberId), errors.Is(err, kafka.FencedInstanceID):
			g.log.Warn("kafka: the group coordinator no longer knows this member; joining again", "group", g.id, "generation", gen.id, "err", err)
			return endUnknown
		case errors.Is(err, kafka.IllegalGeneration):
			g.log.Warn("kafka: the group moved to a new generation; joining again", "group", g.id, "generation", gen.id)
			return endLost
		default:
			g.failures.Add(1)
			if time.Since(lastOK) >= g.session {
				g.log.Warn("kafka: no heartbeat answered for the session timeout; the group has given this member's partitions up",
					"group", g.id, "session_timeout", g.session.String(), "err", err)
				return endLost
			}
			g.beatStreak.fail(g.log, "kafka: heartbeat failed; retrying", "group", g.id, "err", err)
			t.Reset(bo.next())
		}
	}
}

// beat sends gen's heartbeat to the group coordinator.
//
// kafka-go (v0.4.51) neither routes a Heartbeat to the coordinator (its
// request names no group) nor decodes the answer of versions 1 and up:
// it reads the error code before the throttle time, where the protocol
// has it after, so the error code lands in the low 16 bits of Throttle.
// beat sends the request to the coordinator's address and reads the
// error code from there.
func (g *kafkaGroup) beat(gen *generation) error {
	ctx, cancel := context.WithTimeout(g.ctx, min(kafkaRequestTimeout, g.session/2))
	defer cancel()
	addr, err := g.coordinator(ctx)
	if err != nil {
		return err
	}
	var resp *kafka.HeartbeatResponse
	err = retryConn(ctx, func() (err error) {
		resp, err = g.cl.Heartbeat(ctx, &kafka.HeartbeatRequest{Addr: addr, GroupID: g.id, GenerationID: int32(gen.id), MemberID: gen.member})
		return err
	})
	if err == nil {
		err = resp.Error
		if code := kafka.Error(resp.Throttle.Milliseconds() & 0xffff); err == nil && code != 0 {
			err = code
		}
	}
	if err != nil && !isGroupState(err) {
		g.mu.Lock()
		g.coord = nil // find it again
		g.mu.Unlock()
	}
	return err
}

// isGroupState reports whether err is the coordinator's answer about the
// member or generation (rather than about reaching the coordinator).
func isGroupState(err error) bool {
	return errors.Is(err, kafka.RebalanceInProgress) || errors.Is(err, kafka.UnknownMemberId) ||
		errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.FencedInstanceID)
}

// coordinator returns the address of the group's coordinator.
func (g *kafkaGroup) coordinator(ctx context.Context) (net.Addr, error) {
	g.mu.Lock()
	addr := g.coord
	g.mu.Unlock()
	if addr != nil {
		return addr, nil
	}
	var resp *kafka.FindCoordinatorResponse
	err := retryConn(ctx, func() (err error) {
		resp, err = g.cl.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: g.id, KeyType: kafka.CoordinatorKeyTypeConsumer})
		return err
	})
	if err == nil {
		err = resp.Error
	}
	if err == nil && resp.Coordinator == nil {
		err = errors.New("no coordinator in the answer")
	}
	if err != nil {
		return nil, fmt.Errorf("finding the group coordinator: %w", err)
	}
	addr = kafka.TCP(net.JoinHostPort(resp.Coordinator.Host, strconv.Itoa(resp.Coordinator.Port)))
	g.mu.Lock()
	g.coord = addr
	g.mu.Unlock()
	return addr, nil
}

// join joins the group (as member, or as a new member if ""), the
// leader assigning the partitions, and returns the new generation with
// the partitions' committed offsets, and the member ID.
func (g *kafkaGroup) join(member string) (*generation, string, error) {
	sub := kafka.GroupProtocolSubscription{Topics: g.topics}
	for range 10 {
		ctx, cancel := context.WithTimeout(g.ctx, g.rebalance+kafkaRequestTimeout)
		jr, err := g.cl.JoinGroup(ctx, &kafka.JoinGroupRequest{
			GroupID: g.id, SessionTimeout: g.session, RebalanceTimeout: g.rebalance, MemberID: member,
			ProtocolType: "consumer",
			Protocols:    []kafka.GroupProtocol{{Name: "range", Metadata: sub}, {Name: "roundrobin", Metadata: sub}},
		})
		cancel()
		if err != nil {
			return nil, member, err
		}
		switch {
		case errors.Is(jr.Error, kafka.MemberIDRequired):
			member = jr.MemberID // join again with it
			continue
		case errors.Is(jr.Error, kafka.UnknownMemberId):
			member = ""
			continue
		case errors.Is(jr.Error, kafka.RebalanceInProgress):
			continue
		case jr.Error != nil:
			return nil, member, jr.Error
		}
		member = jr.MemberID
		gen := &generation{id: jr.GenerationID, member: member, leader: jr.LeaderID == member}
		var plan []kafka.SyncGroupRequestAssignment
		if gen.leader {
			if plan, gen.counts, err = g.plan(jr); err != nil {
				return nil, member, fmt.Errorf("assigning the partitions: %w", err)
			}
		}
		ctx, cancel = context.WithTimeout(g.ctx, g.rebalance+kafkaRequestTimeout)
		sr, err := g.cl.SyncGroup(ctx, &kafka.SyncGroupRequest{
			GroupID: g.id, GenerationID: jr.GenerationID, MemberID: member,
			ProtocolType: "consumer", ProtocolName: jr.ProtocolName, Assignments: plan,
		})
		cancel()
		if err != nil {
			return nil, member, err
		}
		switch {
		case errors.Is(sr.Error, kafka.RebalanceInProgress), errors.Is(sr.Error, kafka.IllegalGeneration):
			continue
		case errors.Is(sr.Error, kafka.UnknownMemberId):
			member = ""
			continue
		case sr.Error != nil:
			return nil, member, sr.Error
		}
		gen.own = map[topicPart]bool{}
		for topic, ps := range sr.Assignment.AssignedPartitions {
			for _, p := range ps {
				tp := topicPart{topic, p}
				gen.parts = append(gen.parts, tp)
				gen.own[tp] = true
			}
		}
		sort.Slice(gen.parts, func(i, j int) bool {
			a, b := gen.parts[i], gen.parts[j]
			return a.topic < b.topic || a.topic == b.topic && a.partition < b.partition
		})
		ctx, cancel = context.WithTimeout(g.ctx, kafkaRequestTimeout)
		gen.committed, err = g.committedOffsets(ctx, gen.parts)
		cancel()
		if err != nil {
			return nil, member, fmt.Errorf("reading the committed offsets: %w", err)
		}
		return gen, member, nil
	}
	return nil, member, errors.New("the group kept rebalancing")
}

// plan assigns the partitions of the members' topics with the assignor
// the coordinator chose.
func (g *kafkaGroup) plan(jr *kafka.JoinGroupResponse) ([]kafka.SyncGroupRequestAssignment, map[string]int, error) {
	members := make([]kafka.GroupMember, 0, len(jr.Members))
	seen := map[string]bool{}
	var topics []string
	for _, m := range jr.Members {
		members = append(members, kafka.GroupMember{ID: m.ID, Topics: m.Metadata.Topics, UserData: m.Metadata.UserData})
		for _, t := range m.Metadata.Topics {
			if !seen[t] {
				seen[t] = true
				topics = append(topics, t)
			}
		}
	}
	parts, counts, err := g.partitions(topics)
	if err != nil {
		return nil, nil, err
	}
	var bal kafka.GroupBalancer = kafka.RangeGroupBalancer{}
	if jr.ProtocolName == "roundrobin" {
		bal = kafka.RoundRobinGroupBalancer{}
	}
	assigned := bal.AssignGroups(members, parts)
	plan := make([]kafka.SyncGroupRequestAssignment, 0, len(members))
	for _, m := range members {
		plan = append(plan, kafka.SyncGroupRequestAssignment{
			MemberID: m.ID, Assignment: kafka.GroupProtocolAssignment{AssignedPartitions: assigned[m.ID]},
		})
	}
	return plan, counts, nil
}

// partitions lists the partitions of topics; a topic that does not exist
// has none.
func (g *kafkaGroup) partitions(topics []string) ([]kafka.Partition, map[string]int, error) {
	ctx, cancel := context.WithTimeout(g.ctx, kafkaRequestTimeout)
	defer cancel()
	md, err := g.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, nil, err
	}
	var parts []kafka.Partition
	counts := map[string]int{}
	for _, t := range md.Topics {
		if t.Error != nil {
			if !errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
				return nil, nil, fmt.Errorf("topic %q: %w", t.Name, t.Error)
			}
			counts[t.Name] = 0
			continue
		}
		counts[t.Name] = len(t.Partitions)
		for _, p := range t.Partitions {
			parts = append(parts, kafka.Partition{Topic: t.Name, ID: p.ID})
		}
	}
	return parts, counts, nil
}

// partitionsChanged reports whether a topic of the group now has another
// number of partitions than gen was assigned with.
func (g *kafkaGroup) partitionsChanged(gen *generation) bool {
	topics := make([]string, 0, len(gen.counts))
	for t := range gen.counts {
		topics = append(topics, t)
	}
	_, counts, err := g.partitions(topics)
	if err != nil {
		return false
	}
	for t, n := range counts {
		if gen.counts[t] != n {
			return true
		}
	}
	return false
}

// committedOffsets asks the coordinator for the group's committed offset
// of each partition (-1 when it has none).
func (g *kafkaGroup) committedOffsets(ctx context.Context, parts []topicPart) (map[topicPart]int64, error) {
	out := make(map[topicPart]int64, len(parts))
	if len(parts) == 0 {
		return out, nil
	}
	topics := map[string][]int{}
	for _, tp := range parts {
		topics[tp.topic] = append(topics[tp.topic], tp.partition)
		out[tp] = -1
	}
	var resp *kafka.OffsetFetchResponse
	err := retryConn(ctx, func() (err error) {
		resp, err = g.cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: g.id, Topics: topics})
		return err
	})
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	for topic, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("%s/%d: %w", topic, p.Partition, p.Error)
			}
			tp := topicPart{topic, p.Partition}
			if _, ok := out[tp]; ok {
				out[tp] = max(p.CommittedOffset, -1)
			}
		}
	}
	return out, nil
}

// drain keeps the generation alive (heartbeats) for the last commit, but
// joins no new one.
func (g *kafkaGroup) drain() { g.draining.Store(true) }

// leave stops the membership and leaves the group, so that its
// partitions move to the other members at once.
func (g *kafkaGroup) leave(started bool) {
	g.cancel()
	if started {
		<-g.done
	}
	g.mu.Lock()
	member := g.member
	g.mu.Unlock()
	if member == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	var resp *kafka.LeaveGroupResponse
	err := retryConn(ctx, func() (err error) {
		resp, err = g.cl.LeaveGroup(ctx, &kafka.LeaveGroupRequest{GroupID: g.id, Members: []kafka.LeaveGroupRequestMember{{ID: member}}})
		return err
	})
	if err == nil && len(resp.Members) == 1 {
		// kafka-go misreads the top-level error code, as a heartbeat's
		// (see beat); the member's is right.
		err = resp.Members[0].Error
	}
	if err != nil && !errors.Is(err, kafka.UnknownMemberId) { // unknown: already gone
		g.log.Warn("kafka: leaving the consumer group failed; its partitions move after the session timeout", "group", g.id, "err", err)
	}
}
