using System.Collections.Concurrent;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using FsCheck;
using FsCheck.Fluent;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Conservation for a stored queue, against the real database: whatever the workers, claims per worker, failures,
/// retries and ordering, and however often the consuming node is stopped gracefully and replaced mid-run, every item enqueued
/// ends exactly once in the table (completed or dead letter), each completed item was handled and each dead letter
/// delivered, failing items get exactly their allowed deliveries, and items of one key complete in enqueue order.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class StoredConservationProperties(PostgresFixture postgres)
{
    private sealed record Scenario(int Workers, int ClaimsPerWorker, int MaxRetryAttempts, bool Ordered, int[] Failures, int[] Handovers)
    {
        public override string ToString() =>
            $"workers={Workers} claims/worker={ClaimsPerWorker} retries={MaxRetryAttempts} ordered={Ordered} failures=[{string.Join(",", Failures)}] handovers=[{string.Join(",", Handovers)}]";
    }

    private static readonly Gen<Scenario> Scenarios =
        from workers in Gen.Choose(1, 3)
        from claims in Gen.Choose(1, 3)
        from retries in Gen.Choose(0, 2)
        from ordered in Gen.Elements(true, false)
        from failures in Gen.Choose(1, 25).SelectMany(length => Gen.ArrayOf(Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(1, 3))), length))
        from handovers in Gen.Choose(0, 2).SelectMany(n => Gen.ArrayOf(Gen.Choose(0, 25), n))
        select new Scenario(workers, claims, retries, ordered, failures, handovers);

    [Fact]
    public void EveryStoredItemEndsOnce_HandledOrDeadLettered_AcrossNodeHandovers() =>
        Check.One(
            Config.QuickThrowOnFailure.WithMaxTest(15),
            Prop.ForAll(Scenarios.ToArbitrary(), scenario => RunAsync(scenario).GetAwaiter().GetResult()));

    private async Task RunAsync(Scenario scenario)
    {
        var schema = await postgres.NewSchemaAsync();
        var completedOrder = new ConcurrentQueue<Notice>();
        var behavior = new Behavior();
        behavior.Handle = (item, context) =>
        {
            if (context.Attempt <= scenario.Failures[item.Number])
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
            for (var i = 0; i < scenario.Failures.Length; i++)
            {
                if (scenario.Handovers.Contains(i))
                {
                    // A graceful stop mid-run (claims released or finished) and a new node in its place.
                    await node.DisposeAsync();
                    node = Start(i + 1);
                }

                ids.Add(await node.Queue.EnqueueWithIdAsync(new Notice(i, "key-" + (i % 3))), i);
            }

            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (2, 3)").Result == scenario.Failures.Length,
                $"every item is finished in the table ({scenario})");

            var allowed = scenario.MaxRetryAttempts + 1;
            var dead = postgres.ScalarAsync<long[]>($"SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM {schema}.items WHERE state = 3").Result;
            var expectedDead = ids.Where(pair => scenario.Failures[pair.Value] >= allowed).Select(pair => pair.Key).Order().ToArray();
            Assert.Equal(expectedDead, dead);

            // Each item handled (completed) exactly once, none of the dead ones; each dead one delivered as a dead letter once.
            var handled = behavior.Deliveries.Select(d => d.Item.Number).Order().ToArray();
            Assert.Equal(ids.Where(pair => !dead.Contains(pair.Key)).Select(pair => pair.Value).Order(), handled);
            Assert.Equal(expectedDead, behavior.DeadLetters.Select(letter => letter.ItemId).Order());
            Assert.All(behavior.DeadLetters, letter => Assert.Equal(DeadLetterReason.Failed, letter.Reason));
            Assert.All(behavior.DeadLetters, letter => Assert.Equal(allowed, letter.Attempts));

            // Deliveries: a failing item is delivered exactly (its failures + 1) times, or its allowance if it died.
            foreach (var (id, number) in ids)
            {
                var expected = Math.Min(scenario.Failures[number] + 1, allowed);
                Assert.Equal(expected, await postgres.ScalarAsync<int>($"SELECT attempts FROM {schema}.items WHERE id = {id}"));
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
