using System.Collections.Concurrent;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.Tests.Internal.Outcomes;

/// <summary>
/// Conservation: at every quiescent point, submitted = completed + failed + cancelled + rejected + discarded +
/// abandoned, and each item, by identity, ends in exactly one of those outcomes; and in every snapshot sampled while
/// items flow, submitted = queued + starting + running + outcomes and the running items are exactly the busy workers'
/// and the submitting threads'. Random worker counts, capacities, policies, concurrent producers, item kinds, resizes
/// and shutdown points, and pauses and resumes between them (a shutdown while paused drains, or hands back at the
/// deadline, as without a pause).
/// </summary>
public sealed class ConservationProperties
{
    /// <summary>How one item is submitted and how it behaves.</summary>
    public enum Kind
    {
        Fire,
        FireThrows,
        FireAsync,
        FireAsyncCancelled,
        Run,
        RunThrows,
        RunCancelledEarly,
        RunCancelledLater,
    }

    /// <summary>One run: the executor's shape, what each producer submits, the resizes meanwhile and when it shuts down.</summary>
    public sealed record Scenario(
        int Workers,
        int Capacity,
        RejectionPolicy Policy,
        Kind[][] Producers,
        int[] Resizes,
        bool[] Pauses,
        int ShutdownAfter,
        bool AbandonAtShutdown)
    {
        public override string ToString() =>
            $"workers={Workers} capacity={Capacity} policy={Policy} producers=[{string.Join(" | ", Producers.Select(p => string.Join(",", p)))}] resizes=[{string.Join(",", Resizes)}] pauses=[{string.Join(",", Pauses)}] shutdownAfter={ShutdownAfter} abandon={AbandonAtShutdown}";
    }

    /// <summary>
    /// Run 150 times: each case starts real threads (up to three producers of 40 items, a sampler, up to four workers)
    /// and takes a few milliseconds, so 150 cases cover every policy with every worker count several times over, in
    /// a few seconds. On failure FsCheck.Xunit prints the case and its replay seed (<c>Replay = "..."</c> reruns it).
    /// </summary>
    [Property(MaxTest = 150, Arbitrary = [typeof(Arbitraries)])]
    public void EveryItemEndsInExactlyOneOutcome_AndTheCountersAgree(Scenario scenario) => RunScenario(scenario);

    /// <summary>The generators of this property.</summary>
    public static class Arbitraries
    {
        /// <summary>Random worker counts, capacities, policies, producers of mixed item kinds, resizes and shutdown points.</summary>
        public static Arbitrary<Scenario> Scenarios() =>
            (from workers in Gen.Choose(1, 4)
             from capacity in Gen.Choose(1, 8)
             from policy in Gen.Elements(Enum.GetValues<RejectionPolicy>())
             from producers in Gen.Choose(1, 3).SelectMany(n => Gen.ArrayOf(Gen.Elements(Enum.GetValues<Kind>()), 40).Resize(40).ArrayOf(n))
             from resizes in Gen.ArrayOf(Gen.Choose(1, 4), 4)
             from pauses in Gen.ArrayOf(Gen.Elements(true, false), 4)
             from shutdownAfter in Gen.Choose(0, 120)
             from abandon in Gen.Elements(true, false)
             select new Scenario(workers, capacity, policy, producers, resizes, pauses, shutdownAfter, abandon)).ToArbitrary();
    }

    private static void RunScenario(Scenario scenario)
    {
        var outcomes = new ConcurrentDictionary<int, ConcurrentQueue<string>>();
        var ids = new ConcurrentDictionary<Delegate, int>(ReferenceEqualityComparer.Instance);
        void Record(int id, string outcome) => outcomes.GetOrAdd(id, _ => new()).Enqueue(outcome);

        var executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "property",
            WorkerCount = scenario.Workers,
            MaxWorkerCount = 4,
            QueueCapacity = scenario.Capacity,
            RejectionPolicy = scenario.Policy,
            WaitTimeout = TimeSpan.FromMilliseconds(5),
            OnRejected = args => Record(ids[args.Item.Callback], args.Reason switch
            {
                RejectionReason.Discarded or RejectionReason.Evicted => "discarded",
                _ => "rejected",
            }),
        });

        var sampling = true;
        var disagreements = new ConcurrentQueue<BoundedExecutorStatistics>();
        var sampler = new Thread(() =>
        {
            while (Volatile.Read(ref sampling))
            {
                var s = executor.GetStatistics();
                if (s.Running != s.BusyWorkerCount + s.RunningOnCallers
                    || s.BusyWorkerCount > s.LiveWorkerCount
                    || s.Starting < 0
                    || s.RunningOnCallers < 0
                    || s.Submitted != s.QueueLength + s.Starting + s.Running + s.Completed + s.Failed + s.Cancelled + s.Rejected + s.Discarded + s.Abandoned)
                {
                    disagreements.Enqueue(s);
                }
            }
        });
        sampler.Start();

        var submittedSoFar = 0;
        var tasks = new ConcurrentQueue<(int Id, Task Task)>();
        var producers = scenario.Producers.Select((kinds, p) => new Thread(() =>
        {
            for (var i = 0; i < kinds.Length; i++)
            {
                var id = (p * 1000) + i;
                Submit(executor, kinds[i], id, ids, Record, tasks);
                Interlocked.Increment(ref submittedSoFar);
            }
        })).ToArray();
        foreach (var producer in producers)
        {
            producer.Start();
        }

        var resize = 0;
        while (Volatile.Read(ref submittedSoFar) < scenario.ShutdownAfter && producers.Any(p => p.IsAlive))
        {
            if (resize < scenario.Resizes.Length)
            {
                // Each step pauses or resumes, then resizes: the last pause may still be in force at shutdown.
                if (scenario.Pauses[resize])
                {
                    executor.Pause("property");
                }
                else
                {
                    executor.Resume();
                }

                executor.Resize(scenario.Resizes[resize++]);
            }

            Thread.Yield();
        }

        ShutdownResult result;
        if (scenario.AbandonAtShutdown)
        {
            result = executor.ShutdownAsync(new CancellationToken(canceled: true)).GetAwaiter().GetResult();
        }
        else
        {
            result = executor.ShutdownAsync().GetAwaiter().GetResult();
        }

        foreach (var item in result.AbandonedItems)
        {
            Record(ids[item.Callback], "abandoned");
        }

        foreach (var producer in producers)
        {
            Assert.True(producer.Join(TestKit.Safety));
        }

        Assert.True(executor.Completion.Wait(TestKit.Safety), "Workers did not exit.");
        Volatile.Write(ref sampling, false);
        sampler.Join();
        Assert.True(disagreements.IsEmpty, $"A snapshot disagreed with itself: {disagreements.FirstOrDefault()} in {scenario}");
        foreach (var (id, task) in tasks)
        {
            Assert.True(((IAsyncResult)task).AsyncWaitHandle.WaitOne(TestKit.Safety), $"Task of item {id} never completed.");
            if (task.IsCanceled && !outcomes.ContainsKey(id))
            {
                Record(id, "cancelled");
            }
        }

        var total = scenario.Producers.Sum(p => p.Length);
        var statistics = executor.GetStatistics();
        Assert.Equal(total, statistics.Submitted);
        TestKit.AssertConserved(statistics);
        Assert.Equal(total, outcomes.Count);
        foreach (var (id, seen) in outcomes)
        {
            Assert.True(seen.Count == 1, $"Item {id} ended {seen.Count} times: {string.Join(", ", seen)} in {scenario}");
        }

        long Count(string outcome) => outcomes.Values.Count(q => q.Single() == outcome);
        Assert.Equal(statistics.Completed, Count("completed"));
        Assert.Equal(statistics.Failed, Count("failed"));
        Assert.Equal(statistics.Cancelled, Count("cancelled"));
        Assert.Equal(statistics.Rejected, Count("rejected"));
        Assert.Equal(statistics.Discarded, Count("discarded"));
        Assert.Equal(statistics.Abandoned, Count("abandoned"));
    }

    private static void Submit(
        BoundedExecutor executor,
        Kind kind,
        int id,
        ConcurrentDictionary<Delegate, int> ids,
        Action<int, string> record,
        ConcurrentQueue<(int, Task)> tasks)
    {
        Action work = () => record(id, "completed");
        Action throwing = () =>
        {
            record(id, "failed");
            throw new InvalidOperationException();
        };
        Func<int> function = () =>
        {
            record(id, "completed");
            return id;
        };
        Func<int> throwingFunction = () =>
        {
            record(id, "failed");
            throw new InvalidOperationException();
        };
        ids[work] = id;
        ids[throwing] = id;
        ids[function] = id;
        ids[throwingFunction] = id;

        try
        {
            switch (kind)
            {
                case Kind.Fire:
                    executor.Execute(work);
                    break;
                case Kind.FireThrows:
                    executor.Execute(throwing);
                    break;
                case Kind.FireAsync:
                    executor.ExecuteAsync(work).AsTask().GetAwaiter().GetResult();
                    break;
                case Kind.FireAsyncCancelled:
                    using (var cts = new CancellationTokenSource())
                    {
                        var pending = executor.ExecuteAsync(work, cts.Token).AsTask();
                        cts.Cancel();
                        try
                        {
                            pending.GetAwaiter().GetResult();
                        }
                        catch (OperationCanceledException)
                        {
                            record(id, "cancelled");
                        }
                    }

                    break;
                case Kind.Run:
                    tasks.Enqueue((id, executor.RunAsync(function)));
                    break;
                case Kind.RunThrows:
                    tasks.Enqueue((id, executor.RunAsync(throwingFunction)));
                    break;
                case Kind.RunCancelledEarly:
                    tasks.Enqueue((id, executor.RunAsync(function, new CancellationToken(canceled: true))));
                    break;
                case Kind.RunCancelledLater:
                    var source = new CancellationTokenSource();
                    tasks.Enqueue((id, executor.RunAsync(function, source.Token)));
                    source.Cancel();
                    break;
            }
        }
        catch (RejectedExecutionException)
        {
            // Reported through OnRejected, which recorded the outcome.
        }
    }
}
