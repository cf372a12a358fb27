// A consumer-group member with franz-go (kgo), for the fleet tests: one process per member.
//
//	goclient -bootstrap HOST:PORT -group G -topics a,b -balancer cooperative-sticky [-instance ID]
//
// It prints "assigned t-p,t-p,..." (sorted) whenever what it owns changes, and closes cleanly
// (a LeaveGroup for a dynamic member) when its standard input says "leave" or ends.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	mu    sync.Mutex
	owned = map[string]bool{}
)

func report() {
	names := make([]string, 0, len(owned))
	for tp := range owned {
		names = append(names, tp)
	}
	sort.Strings(names)
	fmt.Printf("assigned %s\n", strings.Join(names, ","))
}

func change(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		mu.Lock()
		defer mu.Unlock()
		for topic, ps := range parts {
			for _, p := range ps {
				name := fmt.Sprintf("%s-%d", topic, p)
				if add {
					owned[name] = true
				} else {
					delete(owned, name)
				}
			}
		}
		report()
	}
}

func balancer(name string) kgo.GroupBalancer {
	switch name {
	case "range":
		return kgo.RangeBalancer()
	case "roundrobin":
		return kgo.RoundRobinBalancer()
	case "sticky":
		return kgo.StickyBalancer()
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer()
	}
	fmt.Fprintf(os.Stderr, "unknown balancer %q\n", name)
	os.Exit(2)
	return nil
}

func main() {
	bootstrap := flag.String("bootstrap", "", "bootstrap servers")
	group := flag.String("group", "", "group id")
	topics := flag.String("topics", "", "comma-separated topics")
	bal := flag.String("balancer", "cooperative-sticky", "range, roundrobin, sticky or cooperative-sticky")
	instance := flag.String("instance", "", "group.instance.id (static membership)")
	flag.Parse()

	opts := []kgo.Opt{
		kgo.SeedBrokers(*bootstrap),
		kgo.ClientID("fleet-go"),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(strings.Split(*topics, ",")...),
		kgo.Balancers(balancer(*bal)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10 * time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.AutoCommitInterval(time.Second),
		kgo.OnPartitionsAssigned(change(true)),
		kgo.OnPartitionsRevoked(change(false)),
		kgo.OnPartitionsLost(change(false)),
	}
	if *instance != "" {
		opts = append(opts, kgo.InstanceID(*instance))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			fetches.EachError(func(t string, p int32, err error) {
				if ctx.Err() == nil {
					fmt.Printf("error %s-%d %v\n", t, p, err)
				}
			})
		}
	}()

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) == "leave" {
			break
		}
	}
	cancel()
	<-done
	cl.Close() // commits what was consumed, then leaves (dynamic members only)
	fmt.Println("closed")
}
