using System.Collections.Concurrent;

namespace BoundedWork.Tests.Internal.FairShare;

/// <summary>
/// Fair share on a real executor, gated (no sleeps): a quiet tenant is not stuck behind a flood, the per-tenant bounds
/// hold and refuse as the policy says, every refusal is counted under its tenant, and the executor's ledger stays exact.
/// </summary>
public sealed class FairShareExecutorTests
{
    private static BoundedExecutor Create(int workers, int capacity, RejectionPolicy policy, FairShareSettings fairShare, List<WorkItemRejectedArguments>? rejected = null) =>
        TestKit.Create(workers, capacity, policy, o =>
        {
            o.FairShare = fairShare;
            if (rejected is not null)
            {
                o.OnRejected = r =>
                {
                    lock (rejected)
                    {
                        rejected.Add(r);
                    }
                };
            }
        });

    [Fact]
    public void ForTenant_QuietTenantBehindFlood_RunsWithinTheFirstTurns()
    {
        using var gate = new Gate();
        using var executor = Create(1, 100, RejectionPolicy.Abort, new FairShareSettings());
        Assert.True(executor.TryExecute(gate.Blocker)); // no tenant: occupies the only worker
        gate.WaitEntered();
        var order = new ConcurrentQueue<string>();
        for (var i = 0; i < 20; i++)
        {
            Assert.True(executor.ForTenant("flood").TryExecute(() => order.Enqueue("flood")));
        }

        Assert.True(executor.ForTenant("quiet").TryExecute(() => order.Enqueue("quiet")));
        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.Completed == 22);
        Assert.InRange(order.ToList().IndexOf("quiet"), 0, 1); // FIFO would run it 21st
        TestKit.AssertConserved(executor.GetStatistics());
    }

    [Fact]
    public void ForTenant_FairShareOff_TenantIgnoredAndArrivalOrderKept()
    {
        using var gate = new Gate();
        using var executor = TestKit.Create(1, 100);
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        var log = new RunLog();
        for (var i = 0; i < 5; i++)
        {
            Assert.True(executor.ForTenant("flood").TryExecute(log.Item(i)));
        }

        Assert.True(executor.ForTenant("quiet").TryExecute(log.Item(5)));
        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.Completed == 7);
        Assert.Equal([0, 1, 2, 3, 4, 5], log.Ran);
        Assert.Empty(executor.GetTenantStatistics());
    }

    [Fact]
    public void MaxQueuedPerTenant_Abort_RefusesThatTenantOnly_CountedUnderIt()
    {
        var rejected = new List<WorkItemRejectedArguments>();
        using var gate = new Gate();
        using var executor = Create(1, 100, RejectionPolicy.Abort, new FairShareSettings { MaxQueuedPerTenant = 2 }, rejected);
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        var a = executor.ForTenant("a");
        Assert.True(a.TryExecute(() => { }));
        Assert.True(a.TryExecute(() => { }));
        Assert.False(a.TryExecute(() => { }));
        var thrown = Assert.Throws<RejectedExecutionException>(() => a.Execute(() => { }));
        Assert.Equal(RejectionReason.TenantLimit, thrown.Reason);
        Assert.True(executor.ForTenant("b").TryExecute(() => { }));

        var tenants = executor.GetTenantStatistics().ToDictionary(t => t.Tenant);
        Assert.Equal(2, tenants["a"].Queued);
        Assert.Equal(2, tenants["a"].Refused);
        Assert.Equal(1, tenants["b"].Queued);
        Assert.Equal(0, tenants["b"].Refused);
        Assert.Equal([RejectionReason.TenantLimit, RejectionReason.TenantLimit], rejected.Select(r => r.Reason));

        gate.Open();
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 4);
        Assert.Equal(2, s.Rejected);
        TestKit.AssertConserved(s);
        Assert.Equal(2, executor.GetTenantStatistics().Single(t => t.Tenant == "a").Completed);
    }

    [Fact]
    public void MaxQueuedPerTenant_DiscardOldest_EvictsThatTenantsOldest()
    {
        var rejected = new List<WorkItemRejectedArguments>();
        using var gate = new Gate();
        using var executor = Create(1, 100, RejectionPolicy.DiscardOldest, new FairShareSettings { MaxQueuedPerTenant = 2 }, rejected);
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        var log = new RunLog();
        var a = executor.ForTenant("a");
        a.Execute(log.Item(1));
        a.Execute(log.Item(2));
        a.Execute(log.Item(3));
        Assert.Equal(RejectionReason.Evicted, Assert.Single(rejected).Reason);
        gate.Open();
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 3);
        Assert.Equal([2, 3], log.Ran);
        Assert.Equal(1, s.Discarded);
        TestKit.AssertConserved(s);
        Assert.Equal(1, executor.GetTenantStatistics().Single(t => t.Tenant == "a").Refused);
    }

    [Fact]
    public void MaxRunningPerTenant_TwoWorkers_OtherTenantRunsWhileTheBoundHoldsTheSecond()
    {
        using var executor = Create(2, 100, RejectionPolicy.Abort, new FairShareSettings { MaxRunningPerTenant = 1 });
        using var firstStarted = new ManualResetEventSlim();
        using var releaseFirst = new ManualResetEventSlim();
        using var bDone = new ManualResetEventSlim();
        var aRunning = 0;
        var aMax = 0;
        void A(bool first)
        {
            var now = Interlocked.Increment(ref aRunning);
            InterlockedMax(ref aMax, now);
            if (first)
            {
                firstStarted.Set();
                releaseFirst.WaitOrFail("the first item's release");
            }

            Interlocked.Decrement(ref aRunning);
        }

        var a = executor.ForTenant("a");
        Assert.True(a.TryExecute(() => A(first: true)));
        firstStarted.WaitOrFail("the first item");
        Assert.True(a.TryExecute(() => A(first: false)));
        Assert.True(executor.ForTenant("b").TryExecute(bDone.Set));
        bDone.WaitOrFail("the other tenant's item, on the second worker");

        var held = executor.GetTenantStatistics().Single(t => t.Tenant == "a");
        Assert.Equal(1, held.Running);
        Assert.Equal(1, held.Queued); // the second waits for the bound, not for a worker

        releaseFirst.Set();
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 3);
        Assert.Equal(1, aMax);
        TestKit.AssertConserved(s);
        Assert.Equal(0, executor.Tenants.Count);
    }

    [Fact]
    public void Pause_DeferredTenantItem_DoesNotStartUntilResumed()
    {
        using var gate = new Gate();
        using var secondRan = new ManualResetEventSlim();
        using var executor = Create(2, 100, RejectionPolicy.Abort, new FairShareSettings { MaxRunningPerTenant = 1 });
        var a = executor.ForTenant("a");
        Assert.True(a.TryExecute(gate.Blocker));
        gate.WaitEntered();
        Assert.True(a.TryExecute(secondRan.Set));
        TestKit.WaitForStatistics(executor, s => s.Starting == 1); // the second worker deferred it: "a" is at its bound
        executor.Pause("downstream is down");
        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.Completed >= 1);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 2, TestKit.Safety), "Workers never parked.");
        Assert.False(secondRan.IsSet, "A deferred item started while the executor was paused.");

        Assert.True(executor.Resume());
        secondRan.WaitOrFail("the deferred item after the resume");
        TestKit.AssertConserved(TestKit.WaitForStatistics(executor, s => s.Completed == 2));
    }

    [Fact]
    public void RateLimiter_DeferredTenantItem_WaitsForItsOwnPermit()
    {
        using var gate = new Gate();
        using var secondRan = new ManualResetEventSlim();
        using var limiter = new ManualRateLimiter(permits: 2);
        using var executor = TestKit.Create(2, 100, RejectionPolicy.Abort, o =>
        {
            o.FairShare = new FairShareSettings { MaxRunningPerTenant = 1 };
            o.RateLimiter = limiter;
        });
        var a = executor.ForTenant("a");
        Assert.True(a.TryExecute(gate.Blocker));
        gate.WaitEntered();
        Assert.True(a.TryExecute(secondRan.Set));
        TestKit.WaitForStatistics(executor, s => s.Starting == 1); // the second permit went to the claim that deferred it
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety), "The second worker never parked.");
        var refusedBefore = limiter.Refused;
        gate.Open();
        Assert.True(SpinWait.SpinUntil(() => secondRan.IsSet || limiter.Refused > refusedBefore, TestKit.Safety), "Nothing asked for a permit.");
        Assert.False(secondRan.IsSet, "A deferred item started without a permit.");

        limiter.Grant(1);
        secondRan.WaitOrFail("the deferred item once a permit is granted");
        Assert.Equal(3, limiter.Granted);
        TestKit.AssertConserved(TestKit.WaitForStatistics(executor, s => s.Completed == 2));
    }

    [Fact]
    public void Default_TenantExecutor_ThrowsInvalidOperationNamingForTenant()
    {
        var none = default(TenantExecutor);
        var thrown = Assert.Throws<InvalidOperationException>(() => none.TryExecute(() => { }));
        Assert.Contains("ForTenant", thrown.Message, StringComparison.Ordinal);
        Assert.Throws<InvalidOperationException>(() => none.Tenant);
        Assert.Throws<InvalidOperationException>(() => none.Executor);
        Assert.Throws<InvalidOperationException>(() => { _ = none.RunAsync(() => { }); });
    }

    [Fact]
    public void ShedLongestBacklog_QueueFull_FloodGivesWayThenIsRefused()
    {
        var rejected = new List<WorkItemRejectedArguments>();
        using var gate = new Gate();
        using var executor = Create(1, 4, RejectionPolicy.Abort, new FairShareSettings { ShedLongestBacklog = true }, rejected);
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        var log = new RunLog();
        for (var i = 0; i < 4; i++)
        {
            Assert.True(executor.ForTenant("flood").TryExecute(log.Item(i)));
        }

        Assert.True(executor.ForTenant("quiet").TryExecute(log.Item(100))); // the flood's newest gives way
        Assert.False(executor.ForTenant("flood").TryExecute(log.Item(4))); // the longest backlog is refused first
        Assert.Equal([RejectionReason.Evicted, RejectionReason.QueueFull], rejected.Select(r => r.Reason));

        gate.Open();
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 5);
        Assert.Equal([0, 100, 1, 2], log.Ran);
        TestKit.AssertConserved(s);
        var tenants = executor.GetTenantStatistics().ToDictionary(t => t.Tenant);
        Assert.Equal(2, tenants["flood"].Refused);
        Assert.Equal(0, tenants["quiet"].Refused);
    }

    [Fact]
    public void DiscardOldest_QueueFullOfTenantSlots_EvictsAnItemFromTheLanes()
    {
        var rejected = new List<WorkItemRejectedArguments>();
        using var gate = new Gate();
        using var executor = Create(1, 2, RejectionPolicy.DiscardOldest, new FairShareSettings(), rejected);
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        var log = new RunLog();
        executor.ForTenant("a").Execute(log.Item(1));
        executor.ForTenant("a").Execute(log.Item(2));
        executor.ForTenant("b").Execute(log.Item(3));
        Assert.Equal(RejectionReason.Evicted, Assert.Single(rejected).Reason);
        gate.Open();
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 3);
        Assert.Equal(2, log.Ran.Count);
        Assert.Contains(3, log.Ran);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public async Task Wait_TenantItemWaitsForRoom_AdmittedIntoItsLaneWhenASlotFrees()
    {
        using var gate = new Gate();
        using var executor = Create(1, 1, RejectionPolicy.Wait, new FairShareSettings());
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        var log = new RunLog();
        await executor.ForTenant("a").ExecuteAsync(log.Item(1));
        var waiting = executor.ForTenant("b").ExecuteAsync(log.Item(2));
        Assert.False(waiting.IsCompleted);
        Assert.Equal(1, executor.GetTenantStatistics().Single(t => t.Tenant == "b").Queued); // reserved while it waits
        gate.Open();
        await waiting.AsTask().WaitAsync(TestKit.Safety);
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 3);
        Assert.Equal([1, 2], log.Ran);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public async Task RunAsync_ForTenant_ReturnsResult_AndFaultsWhenRefused()
    {
        using var gate = new Gate();
        using var executor = Create(1, 100, RejectionPolicy.Abort, new FairShareSettings { MaxQueuedPerTenant = 1 });
        Assert.Equal(42, await executor.ForTenant("a").RunAsync(() => 42));
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        var queued = executor.ForTenant("a").RunAsync(() => 1);
        var refused = executor.ForTenant("a").RunAsync(() => 2);
        var error = await Assert.ThrowsAsync<RejectedExecutionException>(() => refused);
        Assert.Equal(RejectionReason.TenantLimit, error.Reason);
        gate.Open();
        Assert.Equal(1, await queued.WaitAsync(TestKit.Safety));
        TestKit.AssertConserved(TestKit.WaitForStatistics(executor, s => s.Completed == 3));
    }

    [Fact]
    public void Shutdown_DeadlineWithTenantItemsQueuedAndDeferred_HandsEveryOneBack()
    {
        using var gate = new Gate();
        var executor = Create(2, 100, RejectionPolicy.Abort, new FairShareSettings { MaxRunningPerTenant = 1 });
        var a = executor.ForTenant("a");
        Assert.True(a.TryExecute(gate.Blocker));
        gate.WaitEntered();
        for (var i = 0; i < 5; i++)
        {
            Assert.True(a.TryExecute(() => { }));
        }

        // The second worker claims each slot, finds "a" at its bound, and defers it: the statistics show them as starting.
        TestKit.WaitForStatistics(executor, s => s.Starting == 5);
        var result = executor.Shutdown(TimeSpan.Zero);
        Assert.Equal(5, result.AbandonedItems.Count);
        gate.Open();
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 1);
        executor.Completion.WaitOrFail("the workers to exit");
        Assert.Equal(5, s.Abandoned);
        Assert.Equal(0, s.Starting);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public async Task DiscardOldest_TenantAtItsBoundWithItsItemStillOnItsWayIn_KeepsTheNewItemInsteadOfRefusingIt()
    {
        // The bound check and the swap of the tenant's oldest item were two decisions: when the tenant's only item was
        // still a reservation (here a producer waiting for room), the swap found nothing queued and the new item was
        // refused with TenantLimit, which DiscardOldest never does (a producer thread of the stress test below crashed
        // on it). Now the decision is one, and a tenant whose items are all on their way in waits for them to land.
        using var gate = new Gate();
        using var executor = Create(1, 1, RejectionPolicy.Wait, new FairShareSettings { MaxQueuedPerTenant = 1 });
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        Assert.True(executor.TryExecute(() => { })); // the queue (capacity 1) is full
        var log = new RunLog();
        var waiting = executor.ForTenant("a").ExecuteAsync(log.Item(1));
        Assert.False(waiting.IsCompleted);
        Assert.Equal(1, executor.GetTenantStatistics().Single(t => t.Tenant == "a").Queued); // reserved while it waits
        executor.Reconfigure(s => s with { RejectionPolicy = RejectionPolicy.DiscardOldest });
        using var calling = new ManualResetEventSlim();
        var newest = Task.Factory.StartNew(
            () =>
            {
                calling.Set();
                executor.ForTenant("a").Execute(log.Item(2));
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        Assert.True(calling.Wait(TestKit.Safety));
        gate.Open();
        await newest.WaitAsync(TestKit.Safety); // threw RejectedExecutionException (TenantLimit) before
        await waiting.AsTask().WaitAsync(TestKit.Safety);
        var s = TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.Running == 0 && s.Starting == 0 && s.Submitted == 4);
        Assert.Contains(2, log.Ran); // DiscardOldest keeps the newest
        Assert.Equal(0, s.Rejected);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public void ForTenant_ManyProducersAndTenants_EveryItemRunsOnceAndTheLedgerIsExact()
    {
        var fairShare = new FairShareSettings { MaxRunningPerTenant = 2, MaxQueuedPerTenant = 50, TenantSeriesLimit = 3 }.WithWeight("t0", 5);
        using var executor = Create(4, 64, RejectionPolicy.DiscardOldest, fairShare);
        var ran = new ConcurrentDictionary<int, int>();
        const int PerProducer = 2_000;
        var errors = new ConcurrentQueue<Exception>(); // a throw on a thread of its own would end the test host
        var producers = Enumerable.Range(0, 4).Select(p => new Thread(() =>
        {
            try
            {
                Produce(p);
            }
            catch (Exception e)
            {
                errors.Enqueue(e);
            }
        })).ToList();
        producers.ForEach(t => t.Start());
        producers.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
        Assert.Empty(errors);
        var s = TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.Running == 0 && s.Starting == 0);
        Assert.Equal(4 * PerProducer, s.Submitted);
        TestKit.AssertConserved(s);
        Assert.All(ran.Values, n => Assert.Equal(1, n));
        Assert.Equal(s.Completed, ran.Count);
        Assert.Equal(0, executor.Tenants.Count);
        var tenants = executor.GetTenantStatistics(100);
        Assert.Equal(4, tenants.Count); // three with their own series, the rest as "(other)"
        Assert.Contains(tenants, t => t.Tenant == TenantStatistics.OtherTenants);
        Assert.Equal(s.Completed - ran.Keys.Count(id => id % PerProducer % 7 == 0 && id % PerProducer % 3 != 0), tenants.Sum(t => t.Completed));

        void Produce(int p)
        {
            for (var i = 0; i < PerProducer; i++)
            {
                var id = (p * PerProducer) + i;
                var tenant = "t" + (i % (p + 2));
                if (i % 3 == 0)
                {
                    executor.ForTenant(tenant).TryExecute(() => ran.AddOrUpdate(id, 1, (_, n) => n + 1));
                }
                else if (i % 7 == 0)
                {
                    executor.TryExecute(() => ran.AddOrUpdate(id, 1, (_, n) => n + 1));
                }
                else
                {
                    executor.ForTenant(tenant).Execute(() => ran.AddOrUpdate(id, 1, (_, n) => n + 1));
                }
            }
        }
    }

    [Fact]
    public void Reconfigure_FairShareWeights_ValidatedAndPutInForce()
    {
        using var executor = Create(1, 10, RejectionPolicy.Abort, new FairShareSettings());
        var error = Assert.Throws<ArgumentException>(() => executor.Reconfigure(s => s with { FairShare = new FairShareSettings { DefaultWeight = 0 } }));
        Assert.Contains("FairShare.DefaultWeight", error.Message, StringComparison.Ordinal);
        executor.Reconfigure(s => s with { FairShare = s.FairShare!.WithWeight("acme", 7) });
        Assert.Equal(7, executor.Settings.FairShare!.GetWeight("acme"));
        Assert.Equal(1, executor.Settings.FairShare.GetWeight("other"));
        Assert.Throws<ArgumentException>(() => executor.ForTenant(""));
        Assert.Throws<ArgumentException>(() => executor.ForTenant("a\nb"));
    }

    [Fact]
    public void TenantWaitHistogram_RecordsEachTenantsWaitOnItsSeries_TheRestAsOther()
    {
        var name = $"tenant-wait-{Guid.NewGuid():N}";
        var clock = new Microsoft.Extensions.Time.Testing.FakeTimeProvider();
        var waits = new ConcurrentQueue<(string Tenant, double Seconds)>();
        using var listener = new System.Diagnostics.Metrics.MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName && instrument.Name == "boundedwork.tenant.wait.duration")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<double>((_, value, tags, _) =>
        {
            string? executorTag = null, tenant = null;
            foreach (var tag in tags)
            {
                executorTag = tag.Key == BoundedWorkDiagnostics.ExecutorTag ? (string?)tag.Value : executorTag;
                tenant = tag.Key == BoundedWorkDiagnostics.TenantTag ? (string?)tag.Value : tenant;
            }

            if (executorTag == name)
            {
                waits.Enqueue((tenant!, value));
            }
        });
        listener.Start();
        using var gate = new Gate();
        using var executor = TestKit.Create(1, 100, name: name, configure: o =>
        {
            o.TimeProvider = clock;
            o.FairShare = new FairShareSettings { TenantSeriesLimit = 1 };
        });
        Assert.True(executor.TryExecute(gate.Blocker));
        gate.WaitEntered();
        executor.ForTenant("a").Execute(() => { });
        clock.Advance(TimeSpan.FromSeconds(2));
        executor.ForTenant("b").Execute(() => { });
        clock.Advance(TimeSpan.FromSeconds(3));
        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.Completed == 3);

        // Recorded as each item starts: both started after the clock stood still, 5 s and 3 s after their submission.
        Assert.Equal([("a", 5.0), (TenantStatistics.OtherTenants, 3.0)], waits.OrderBy(w => w.Seconds).Reverse().ToArray());
    }

    [Fact]
    public void TenantInstruments_MoreTenantsThanTheSeriesLimit_RestReportedAsOther()
    {
        var name = $"tenants-{Guid.NewGuid():N}";
        using var executor = TestKit.Create(2, 100, name: name, configure: o => o.FairShare = new FairShareSettings { TenantSeriesLimit = 2 });
        for (var t = 0; t < 5; t++)
        {
            executor.ForTenant("t" + t).Execute(() => { });
        }

        TestKit.WaitForStatistics(executor, s => s.Completed == 5);
        var completed = new Dictionary<string, long>();
        using var listener = new System.Diagnostics.Metrics.MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName && instrument.Name == "boundedwork.tenant.items")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            string? executorTag = null, tenant = null, outcome = null;
            foreach (var tag in tags)
            {
                executorTag = tag.Key == BoundedWorkDiagnostics.ExecutorTag ? (string?)tag.Value : executorTag;
                tenant = tag.Key == BoundedWorkDiagnostics.TenantTag ? (string?)tag.Value : tenant;
                outcome = tag.Key == BoundedWorkDiagnostics.OutcomeTag ? (string?)tag.Value : outcome;
            }

            if (executorTag == name && outcome == "completed")
            {
                completed[tenant!] = value;
            }
        });
        listener.Start();
        listener.RecordObservableInstruments();
        Assert.Equal(3, completed.Count); // two tenants of their own and "(other)"
        Assert.Equal(3, completed[TenantStatistics.OtherTenants]);
        Assert.Equal(5, completed.Values.Sum());
    }

    private static void InterlockedMax(ref int target, int value)
    {
        int seen;
        while ((seen = Volatile.Read(ref target)) < value && Interlocked.CompareExchange(ref target, value, seen) != seen)
        {
        }
    }
}
