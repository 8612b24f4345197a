using System.Text.Json;
using BoundedWork.PostgreSql.Internal;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// What one per-key claim reads, counted by the database (EXPLAIN ANALYZE), not timed: on a deep backlog of few keys
/// with the per-key rule binding, and on many keys of one item each, the rows the table's scans examine (returned,
/// filtered out) stay within a bound that does not grow with the backlog: about (2 * count + 16) * (1 + 2M) when the
/// head of the claim order answers, about keys * (1 + 2M) + count otherwise (see <see cref="KeyedClaimSql"/>). Custom
/// and generic plans alike (a prepared statement keeps its generic plan until an analyze). A large M (a limit that does
/// not bind) walks no more of a key than the head's length plus its running items. (The claim under the settings lock
/// that this statement replaced examined 62,997 rows on the 3 x 3,000 case.)
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyedClaimCostTests(PostgresFixture postgres)
{
    private const int Count = 10;
    private const int PerKey = 2;

    /// <summary>The bound stated for these shapes: a head of 2 * 10 + 16 = 36 rows, each key walked for M = 2 rows and probed for M newer running ones (36 * (1 + 2M) = 180), and the locks and updates of the 10 claimed. Measured: 52 to 92.</summary>
    private const long Bound = 200;

    /// <summary>
    /// The bound for many shallow keys under a limit that does not bind: the head's 36 rows; for each of its 36 keys a
    /// probe of its running items, its running item and its head item, and a probe of newer running items (144); the
    /// locks and updates of the 10 claimed. Measured: 200. Walking each key's whole unfinished list examined 344.
    /// </summary>
    private const long ShallowKeysBound = 220;

    [Theory]
    [InlineData(3, 3000, 1, false)] // binds: one item of each key may start
    [InlineData(3, 3000, 1, true)]
    [InlineData(3, 3000, 2, false)] // binds: nothing may start
    [InlineData(3, 3000, 2, true)]
    [InlineData(3000, 1, 0, false)] // many keys of one item: nothing binds
    [InlineData(3000, 1, 0, true)]
    public async Task ClaimPerKey_DeepBacklog_ExaminesABoundedNumberOfRows(int keys, int itemsPerKey, int runningPerKey, bool generic)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        await FillAsync(claim, keys, itemsPerKey, runningPerKey);

        var (examined, claimed) = await ExplainAsync(claim, new KeyedClaimSql(claim.Sql).ClaimPerKey, generic);

        Assert.Equal(Math.Min(Count, keys * Math.Min(PerKey - runningPerKey, itemsPerKey)), claimed);
        Assert.True(examined <= Bound, $"{examined} rows examined, more than {Bound}.");
    }

    /// <summary>
    /// A per-key limit that does not bind (M = 100,000) over 3 keys of 3,000 items: the claim walks each key for the head's
    /// length plus its running items, not for M items (its whole backlog), and takes the oldest ready items.
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ClaimPerKey_LargeLimitThatDoesNotBind_ReadsNoKeysBacklog(bool generic)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        await FillAsync(claim, 3, 3000, 1);

        var (examined, claimed) = await ExplainAsync(claim, new KeyedClaimSql(claim.Sql).ClaimPerKey, generic, perKey: 100_000);

        Assert.Equal(Count, claimed);
        Assert.True(examined <= 3 * Bound, $"{examined} rows examined, more than {3 * Bound}.");
    }

    /// <summary>
    /// A per-key limit that does not bind (M = 100,000) over many keys of a few items each (the benchmark's shape: 1,000
    /// keys, 4 items each, the oldest of each key running): the head of the claim order holds one item of each of 36
    /// keys, and the claim walks each of those keys only up to its newest item in the head (2 rows), not its whole
    /// unfinished list: the items after it cannot take a turn in the head.
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ClaimPerKey_LimitThatDoesNotBind_WalksEachKeyOnlyToItsNewestItemInTheHead(bool generic)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        await FillAsync(claim, 1000, 4, 1);

        var (examined, claimed) = await ExplainAsync(claim, new KeyedClaimSql(claim.Sql).ClaimPerKey, generic, perKey: 100_000);

        Assert.Equal(Count, claimed);
        Assert.True(examined <= ShallowKeysBound, $"{examined} rows examined, more than {ShallowKeysBound}.");
    }

    /// <summary>
    /// A generic plan made while the table was empty (the cheapest plans then are the worst later) and kept while the
    /// backlog grows (no analyze since): the claim still examines a bounded number of rows.
    /// </summary>
    [Theory]
    [InlineData(3, 3000, 1)]
    [InlineData(3000, 1, 0)]
    public async Task ClaimPerKey_GenericPlanMadeOnAnEmptyTable_StaysBoundedOnAGrownBacklog(int keys, int itemsPerKey, int runningPerKey)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        await using var connection = await claim.OpenAsync();
        await ExecuteAsync(connection, $"ANALYZE {claim.Items}; SET plan_cache_mode = force_generic_plan; "
            + $"PREPARE measured (text, int, text, interval, int, bigint) AS {new KeyedClaimSql(claim.Sql).ClaimPerKey}");
        await ExecuteAsync(connection, $"EXECUTE measured ('{KeyedClaim.Queue}', {Count}, 'test', interval '1 hour', {PerKey}, 0)");
        await FillAsync(claim, keys, itemsPerKey, runningPerKey, analyze: false);

        await using var transaction = await connection.BeginTransactionAsync();
        await using var explain = new NpgsqlCommand(
            $"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE measured ('{KeyedClaim.Queue}', {Count}, 'test', interval '1 hour', {PerKey}, 0)", connection, transaction);
        using var document = JsonDocument.Parse((string)(await explain.ExecuteScalarAsync())!);
        await transaction.RollbackAsync();
        var plan = document.RootElement[0].GetProperty("Plan");

        Assert.Equal(Math.Min(Count, keys * Math.Min(PerKey - runningPerKey, itemsPerKey)), PlanCost.Claimed(plan));
        var examined = PlanCost.Examined(plan);
        Assert.True(examined <= Bound, $"{examined} rows examined, more than {Bound}.");
    }

    /// <summary>Keys k0..k{keys-1} interleaved in enqueue order, the first <paramref name="runningPerKey"/> of each key running; then an analyze.</summary>
    private async Task FillAsync(KeyedClaim claim, int keys, int itemsPerKey, int runningPerKey, bool analyze = true)
    {
        await PlanCost.FillAsync(postgres, $"""
            INSERT INTO {claim.Items} (queue, payload, ordering_key)
            SELECT '{KeyedClaim.Queue}', jsonb_build_object(), 'k' || (g % {keys}) FROM generate_series(0, {(keys * itemsPerKey) - 1}) g ORDER BY g;
            UPDATE {claim.Items} SET state = 1, attempts = 1, lease_owner = 'other', lease_until = now() + interval '1 hour'
            WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY ordering_key ORDER BY id) AS n FROM {claim.Items}) r
                         WHERE r.n <= {runningPerKey});
            {(analyze ? $"ANALYZE {claim.Items};" : string.Empty)}
            """);
    }

    /// <summary>Runs the claim once under EXPLAIN ANALYZE (rolled back): rows examined by scans of the items table, and rows claimed.</summary>
    private static async Task<(long Examined, long Claimed)> ExplainAsync(KeyedClaim claim, string statement, bool generic, int perKey = PerKey)
    {
        await using var connection = await claim.OpenAsync();
        using var document = await PlanCost.ExplainPreparedAsync(connection, statement, "text, int, text, interval, int, bigint",
            $"'{KeyedClaim.Queue}', {Count}, 'test', interval '1 hour', {perKey}, 0", generic);
        Assert.False(document.RootElement[0].TryGetProperty("JIT", out _), "The claim was JIT-compiled: the queue's session settings must turn JIT off.");
        var plan = document.RootElement[0].GetProperty("Plan");
        return (PlanCost.Examined(plan), PlanCost.Claimed(plan));
    }

    private static async Task ExecuteAsync(NpgsqlConnection connection, string sql)
    {
        await using var command = new NpgsqlCommand(sql, connection);
        await command.ExecuteNonQueryAsync();
    }
}
