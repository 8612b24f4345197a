using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>A node's loops keep their schedule when the machine's wall clock is set back (an administrator, an NTP step).</summary>
[Collection(PostgresCollection.Name)]
public sealed class WallClockTests(PostgresFixture postgres)
{
    [Fact]
    public async Task WallClockSteppedBack_LeaseReapingCleanupAndStatistics_KeepTheirSchedule()
    {
        var schema = await postgres.NewSchemaAsync();
        var clock = new SteppedWallClock();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o =>
        {
            o.TimeProvider = clock;
            o.CleanupInterval = TimeSpan.FromMilliseconds(100);
            o.CompletedRetention = TimeSpan.FromHours(1);
            o.DeadLetterRetention = TimeSpan.FromHours(1);
        });

        // Every loop has run on the clock as it was: an item was claimed (the claim loop reaps before it claims) and
        // the statistics were read.
        await node.Queue.EnqueueAsync(new Notice(0));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the first item is handled");
        await DurableQueueTests.WaitAsync(() => node.Storage.Statistics.IsAvailable, "the first statistics are read");

        clock.StepBack(TimeSpan.FromHours(1));

        // Then: a claim of a node that died (its lease expired), a completed row past its retention, and a dead letter
        // that only a new reading of the statistics can show.
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, state, attempts, lease_owner, lease_until)
                VALUES ('notices', '{"Number": 1}', 1, 1, 'a node that died', now() - interval '1 second');
            INSERT INTO {{schema}}.items (queue, payload, state, attempts, finished_at)
                VALUES ('notices', '{"Number": 2}', 2, 1, now() - interval '2 hours'),
                       ('notices', '{"Number": 3}', 3, 1, now());
            """);

        var stalled = (await Task.WhenAll(
            HappensAsync(() => behavior.Deliveries.Any(d => d.Item.Number == 1 && d.Attempt == 2), "the expired lease is reaped and its item runs again"),
            HappensAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE payload->>'Number' = '2'").Result == 0, "cleanup deletes the completed row past its retention"),
            HappensAsync(() => node.Storage.Statistics.DeadLettered == 1, "the statistics are read again"))).OfType<string>().ToArray();
        Assert.True(stalled.Length == 0, "Stalled after the wall clock was set back: " + string.Join("; ", stalled) + ".");
    }

    /// <summary>Waits (up to the patience) until the condition holds; returns what did not happen, or null.</summary>
    private static async Task<string?> HappensAsync(Func<bool> condition, string what)
    {
        try
        {
            await DurableQueueTests.WaitAsync(condition, what);
            return null;
        }
        catch (Xunit.Sdk.XunitException)
        {
            return what;
        }
    }
}

/// <summary>
/// The system's clock, except that the test can set its wall clock back, as an administrator or an NTP step sets a
/// machine's: <see cref="GetUtcNow"/> jumps, the monotonic timestamps (<see cref="TimeProvider.GetTimestamp"/>) go on.
/// </summary>
internal sealed class SteppedWallClock : TimeProvider
{
    private long _offsetTicks;

    public void StepBack(TimeSpan step) => Interlocked.Add(ref _offsetTicks, -step.Ticks);

    public override DateTimeOffset GetUtcNow() => System.GetUtcNow().AddTicks(Interlocked.Read(ref _offsetTicks));
}
