using System.Collections.Concurrent;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Conservation for a stored queue, against the real database: whatever the workers, claims per worker, failures,
/// retries, ordering, delays, priorities, bulk enqueues and cancellations, and however often the consuming node is
/// stopped gracefully and replaced mid-run, every item enqueued ends exactly once in the table (completed, dead letter
/// or cancelled), each completed item was handled once and each dead letter delivered once, no cancelled item was
/// handled, no item started before its time, failing items get exactly their allowed deliveries unless cancelled, and
/// items of one key complete in enqueue order.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class StoredConservationProperties(PostgresFixture postgres)
{
    /// <summary>One item: how many of its deliveries fail, its delay, its priority, and whether it is cancelled right after its enqueue.</summary>
    public sealed record ItemPlan(int Failures, int DelayMs, int Priority, bool Cancel)
    {
        public override string ToString() => $"{Failures}{(DelayMs > 0 ? "+" + DelayMs + "ms" : string.Empty)}{(Priority != 0 ? "p" + Priority : string.Empty)}{(Cancel ? "x" : string.Empty)}";
    }

    /// <summary>One run: the consuming node's shape, each item's plan, the chunk size of bulk enqueues and when the node is replaced.</summary>
    public sealed record Scenario(int Workers, int ClaimsPerWorker, int MaxRetryAttempts, bool Ordered, int BulkSize, ItemPlan[] Items, int[] Handovers)
    {
        public override string ToString() =>
            $"workers={Workers} claims/worker={ClaimsPerWorker} retries={MaxRetryAttempts} ordered={Ordered} bulk={BulkSize} items=[{string.Join(",", Items.AsEnumerable())}] handovers=[{string.Join(",", Handovers)}]";
    }

    /// <summary>
    /// Run 15 times: each case makes a schema on the real server, starts up to three consumer nodes in turn and waits
    /// for every item to finish in the table, about a second apiece, so 15 cases keep the property under half a
    /// minute while crossing retries, delays, priorities, cancellations and handovers. On failure FsCheck.Xunit prints
    /// the case and its replay seed (<c>Replay = "..."</c> reruns it).
    /// </summary>
    [Property(MaxTest = 15, Arbitrary = [typeof(Arbitraries)])]
    public Task EveryStoredItemEndsOnce_HandledDeadLetteredOrCancelled_NeverBeforeItsTime_AcrossNodeHandovers(Scenario scenario) =>
        RunAsync(scenario);

    /// <summary>The generators of this property.</summary>
    public static class Arbitraries
    {
        // One item: mostly succeeds at once, now and then fails, waits, jumps the queue or is cancelled.
        private static readonly Gen<ItemPlan> Items =
            from failures in Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(1, 3)))
            from delay in Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(1, 200)))
            from priority in Gen.Frequency((2, Gen.Constant(0)), (1, Gen.Choose(-2, 2)))
            from cancel in Gen.Frequency((5, Gen.Constant(false)), (1, Gen.Constant(true)))
            select new ItemPlan(failures, delay, priority, cancel);

        /// <summary>One to three workers and claims each, retries, ordering, bulk chunks, up to 25 items and two handovers.</summary>
        public static Arbitrary<Scenario> Scenarios() =>
            (from workers in Gen.Choose(1, 3)
             from claims in Gen.Choose(1, 3)
             from retries in Gen.Choose(0, 2)
             from ordered in Gen.Elements(true, false)
             from bulk in Gen.Frequency((2, Gen.Constant(1)), (1, Gen.Choose(2, 6)))
             from items in Gen.Choose(1, 25).SelectMany(length => Gen.ArrayOf(Items, length))
             from handovers in Gen.Choose(0, 2).SelectMany(n => Gen.ArrayOf(Gen.Choose(0, 25), n))
             select new Scenario(workers, claims, retries, ordered, bulk, items, handovers)).ToArbitrary();
    }

    private async Task RunAsync(Scenario scenario)
    {
        var schema = await postgres.NewSchemaAsync();
        var completedOrder = new ConcurrentQueue<Notice>();
        var starts = new ConcurrentQueue<(int Number, int Attempt, DateTimeOffset At)>();
        var behavior = new Behavior();
        behavior.Handle = (item, context) =>
        {
            starts.Enqueue((item.Number, context.Attempt, DateTimeOffset.UtcNow));
            if (context.Attempt <= scenario.Items[item.Number].Failures)
            {
                throw new InvalidOperationException($"item {item.Number} delivery {context.Attempt}");
            }

            completedOrder.Enqueue(item);
        };

        QueueNode Start(int generation) => QueueNode.StartAsync(
            postgres.ConnectionString,
            schema,
            behavior,
            node: "g" + generation,
            queue: o =>
            {
                o.MaxRetryAttempts = scenario.MaxRetryAttempts;
                o.RetryDelay = TimeSpan.FromMilliseconds(1);
                o.MaxRetryDelay = TimeSpan.FromMilliseconds(5);
                o.OrderingKey = scenario.Ordered ? n => n.Key : null;
            },
            storage: o => o.ClaimsPerWorker = scenario.ClaimsPerWorker,
            executor: o => o.WorkerCount = scenario.Workers).GetAwaiter().GetResult();

        var node = Start(0);
        try
        {
            var ids = new Dictionary<long, int>();
            var earliest = new Dictionary<int, DateTimeOffset>(); // no delivery of the item may start before this
            var cancels = new Dictionary<int, CancelResult>();
            for (var first = 0; first < scenario.Items.Length; first += scenario.BulkSize)
            {
                if (scenario.Handovers.Any(h => h >= first && h < first + scenario.BulkSize))
                {
                    // A graceful stop mid-run (claims released or finished) and a new node in its place.
                    await node.DisposeAsync();
                    node = Start(first + 1);
                }

                // A chunk: one item, or several enqueued in one statement with the first one's delay and priority.
                var numbers = Enumerable.Range(first, Math.Min(scenario.BulkSize, scenario.Items.Length - first)).ToArray();
                var plan = scenario.Items[first];
                var options = new EnqueueOptions { Delay = plan.DelayMs > 0 ? TimeSpan.FromMilliseconds(plan.DelayMs) : null, Priority = plan.Priority };
                var before = DateTimeOffset.UtcNow;
                var chunkIds = numbers.Length == 1
                    ? [(await node.Queue.EnqueueAsync(new Notice(first, "key-" + (first % 3)), options)).ItemId]
                    : await node.Queue.EnqueueManyAsync(numbers.Select(n => new Notice(n, "key-" + (n % 3))), options);
                for (var i = 0; i < numbers.Length; i++)
                {
                    ids.Add(chunkIds[i], numbers[i]);
                    earliest[numbers[i]] = before + TimeSpan.FromMilliseconds(plan.DelayMs) - TimeSpan.FromMilliseconds(1); // the server's now() follows this reading
                    if (scenario.Items[numbers[i]].Cancel)
                    {
                        cancels[numbers[i]] = await node.Queue.CancelAsync(chunkIds[i]);
                    }
                }
            }

            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (2, 3, 4)").Result == scenario.Items.Length,
                $"every item is finished in the table ({scenario})");
            Assert.Equal(scenario.Items.Length, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));

            var states = new Dictionary<int, short>();
            foreach (var (id, number) in ids)
            {
                states[number] = await postgres.ScalarAsync<short>($"SELECT state FROM {schema}.items WHERE id = {id}");
            }

            // Each completed item handled exactly once; no dead or cancelled one handled; each dead one delivered once.
            var handled = behavior.Deliveries.Select(d => d.Item.Number).Order().ToArray();
            Assert.Equal(states.Where(s => s.Value == 2).Select(s => s.Key).Order(), handled);
            var dead = states.Where(s => s.Value == 3).Select(s => s.Key).Order().ToArray();
            Assert.Equal(dead, behavior.DeadLetters.Select(letter => ids[letter.ItemId]).Order());
            Assert.All(behavior.DeadLetters, letter => Assert.Equal(DeadLetterReason.Failed, letter.Reason));

            // What each cancellation found decides what the item could end as.
            var allowed = scenario.MaxRetryAttempts + 1;
            foreach (var (number, state) in states)
            {
                var failures = scenario.Items[number].Failures;
                short[] expected = cancels.TryGetValue(number, out var cancel)
                    ? cancel switch
                    {
                        CancelResult.Cancelled => [4],
                        CancelResult.CancellationRequested => [2, 3, 4],
                        CancelResult.AlreadyCompleted => [2],
                        CancelResult.AlreadyDeadLettered => [3],
                        _ => throw new InvalidOperationException($"item {number}: {cancel} after one cancellation ({scenario})"),
                    }
                    : [failures >= allowed ? (short)3 : (short)2];
                Assert.True(expected.Contains(state), $"item {number} ended in state {state}, expected one of [{string.Join(",", expected)}] ({scenario})");
                if (!cancels.ContainsKey(number))
                {
                    // Not cancelled: delivered exactly its failures + 1 times, or its allowance if it died.
                    var id = ids.Single(pair => pair.Value == number).Key;
                    Assert.Equal(Math.Min(failures + 1, allowed), await postgres.ScalarAsync<int>($"SELECT attempts FROM {schema}.items WHERE id = {id}"));
                }
            }

            // Never before its time.
            foreach (var (number, attempt, at) in starts)
            {
                Assert.True(at >= earliest[number], $"item {number} delivery {attempt} started at {at:O}, before {earliest[number]:O} ({scenario})");
            }

            if (scenario.Ordered)
            {
                foreach (var key in completedOrder.GroupBy(n => n.Key))
                {
                    var numbers = key.Select(n => n.Number).ToArray();
                    Assert.Equal(numbers.Order(), numbers);
                }
            }
        }
        finally
        {
            await node.DisposeAsync();
        }
    }
}
