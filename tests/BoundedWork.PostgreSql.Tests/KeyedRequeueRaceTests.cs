using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// A dead letter requeued with its old id while another node claims a newer item of its key. The claim that takes the
/// newer item is held (by a trigger waiting on an advisory lock the test holds) after its snapshot was taken and its row
/// locked, so it cannot see the requeue; the requeue then runs, and a second claim, which sees the requeue but not the
/// held claim, runs before the held one commits. Before the requeue fenced the key's newer ready items, the second
/// claim took the requeued item and M + 1 ran (with the M = 1 claim of today too).
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyedRequeueRaceTests(PostgresFixture postgres)
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    [Theory]
    [InlineData(false, 1)]
    [InlineData(true, 1)]
    [InlineData(true, 2)]
    public async Task RequeuedDeadLetter_WhileAnEarlierClaimTakesNewerItemsOfItsKey_NeverMoreThanMRun(bool perKeyClaim, int perKey)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var schema = claim.Sql.Schema;
        long gate = Random.Shared.NextInt64(1, long.MaxValue);
        await postgres.ExecuteAsync($"""
            CREATE FUNCTION {schema}.pause_claim() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF current_setting('test.pause', true) = 'on' THEN PERFORM pg_advisory_xact_lock({gate}); END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER pause_claim BEFORE UPDATE ON {claim.Items} FOR EACH ROW
                WHEN (NEW.state = 1 AND OLD.state = 0) EXECUTE FUNCTION {schema}.pause_claim();
            INSERT INTO {claim.Sql.QueueSettings} (queue, max_running_per_key) VALUES ('{KeyedClaim.Queue}', {perKey});
            """);
        // Key a: the dead letter, then M ready items.
        var ids = await claim.InsertAsync([("a", 0, 3), .. Enumerable.Repeat(((string?)"a", 0, 0), perKey)]);

        await using var gateHolder = await claim.OpenAsync();
        await ExecuteAsync(gateHolder, $"SELECT pg_advisory_lock({gate})");
        await using var held = await claim.OpenAsync();
        await ExecuteAsync(held, "SET test.pause = 'on'");
        var heldClaim = ClaimAsync(claim, perKeyClaim, perKey, perKey, held);
        await WaitUntilAsync(() => WaitsOnLockAsync(held.ProcessID), heldClaim, "the first claim waits at its trigger");

        await using var requeuer = await claim.OpenAsync();
        var requeue = claim.RequeueAsync(on: requeuer);
        await WaitUntilAsync(async () => requeue.IsCompleted || await WaitsOnLockAsync(requeuer.ProcessID), requeue, "the requeue is done or waits");

        var second = await ClaimAsync(claim, perKeyClaim, perKey, perKey + 1, connection: null);
        await ExecuteAsync(gateHolder, $"SELECT pg_advisory_unlock({gate})");
        var first = await heldClaim;
        Assert.Equal(1, await requeue);

        Assert.Equal(ids[1..], first.Order());
        Assert.True(await claim.MaxRunningPerKeyAsync() <= perKey,
            $"M = {perKey}: running {string.Join(", ", await claim.RunningAsync())} (first claim took {string.Join(", ", first)}, the second {string.Join(", ", second)}).");

        // And the key drains, the requeued item included, never above M.
        var all = first.Concat(second).ToList();
        await postgres.ExecuteAsync($"DROP TRIGGER pause_claim ON {claim.Items}");
        for (var round = 0; round < 20 && all.Count < ids.Length; round++)
        {
            await claim.CompleteAsync([.. await claim.RunningAsync(), 0]);
            all.AddRange(await ClaimAsync(claim, perKeyClaim, perKey, 10, connection: null));
            Assert.True(await claim.MaxRunningPerKeyAsync() <= perKey);
        }

        Assert.Equal(ids, all.Order());
    }

    internal static async Task<List<long>> ClaimAsync(KeyedClaim claim, bool perKeyClaim, int perKey, int count, NpgsqlConnection? connection)
    {
        if (perKeyClaim)
        {
            return (await claim.ClaimAsync(count, perKey, connection)).Ids;
        }

        var own = connection is null ? await claim.OpenAsync() : null;
        try
        {
            await using var command = new NpgsqlCommand(claim.Sql.Claim, connection ?? own)
            {
                Parameters =
                {
                    new NpgsqlParameter<string> { TypedValue = KeyedClaim.Queue },
                    new NpgsqlParameter<int> { TypedValue = count },
                    new NpgsqlParameter<string> { TypedValue = "test" },
                    new NpgsqlParameter<TimeSpan> { TypedValue = TimeSpan.FromHours(1) },
                    new NpgsqlParameter<long> { TypedValue = 0 }, // the settings version (the row's default): claims go ahead
                    new NpgsqlParameter<int> { TypedValue = 0 }, // held-back items not counted
                },
            };
            var ids = new List<long>();
            await using var reader = await command.ExecuteReaderAsync();
            while (await reader.ReadAsync())
            {
                if (!reader.IsDBNull(0))
                {
                    ids.Add(reader.GetInt64(0));
                }
            }

            return ids;
        }
        finally
        {
            if (own is not null)
            {
                await own.DisposeAsync();
            }
        }
    }

    private async Task<bool> WaitsOnLockAsync(int pid) =>
        await postgres.ScalarAsync<long>($"SELECT count(*) FROM pg_locks WHERE pid = {pid} AND NOT granted") > 0;

    /// <summary>Polls the database until the condition holds (no timing guess: it waits for a state); fails if the task ends with an error first.</summary>
    private static async Task WaitUntilAsync(Func<Task<bool>> condition, Task task, string what)
    {
        var deadline = DateTime.UtcNow + Patience;
        while (!await condition())
        {
            if (task.IsFaulted)
            {
                await task;
            }

            Assert.True(DateTime.UtcNow < deadline, $"Waited {Patience} for: {what}.");
            await Task.Delay(10);
        }
    }

    private static async Task ExecuteAsync(NpgsqlConnection connection, string sql)
    {
        await using var command = new NpgsqlCommand(sql, connection);
        await command.ExecuteNonQueryAsync();
    }
}
