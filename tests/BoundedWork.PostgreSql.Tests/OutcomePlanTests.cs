using System.Text.Json;
using BoundedWork.PostgreSql.Internal;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The outcome write's plan (<see cref="OutcomeStatement"/>), read from EXPLAIN, not timed: right after a bulk insert
/// (no analyze since the indexes were made on the empty table), a generic plan in the queue's session settings reaches
/// the rows through the primary key only, and reads a number of buffers that does not grow with the backlog. (Before
/// its state test became a CASE, the plan took a BitmapOr of items_running and items_ready, probing items_ready by id,
/// its last column: the whole ready index on every write, 30,000 buffers for 100 rows in a drain of 60,000 items.)
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class OutcomePlanTests(PostgresFixture postgres)
{
    private const int Backlog = 20_000;
    private const int Written = 100;

    [Theory]
    [InlineData(0)] // OutcomeKind.Completed
    [InlineData(1)] // OutcomeKind.Released
    [InlineData(3)] // OutcomeKind.Dead
    public async Task OutcomeWrite_AfterBulkInsert_ReachesRowsThroughThePrimaryKeyOnly(int kindNumber)
    {
        var kind = (OutcomeKind)kindNumber;
        var claim = await KeyedClaim.CreateAsync(postgres);
        var running = await postgres.ScalarAsync<long[]>($"""
            INSERT INTO {claim.Items} (queue, payload, state, run_at) SELECT '{KeyedClaim.Queue}', '1', 0, now() FROM generate_series(1, {Backlog});
            WITH claimed AS (
                UPDATE {claim.Items} SET state = 1, attempts = 1, delivery = 1, lease_owner = 'test', lease_until = now() + interval '1 hour'
                WHERE id IN (SELECT id FROM {claim.Items} ORDER BY id LIMIT {Written}) RETURNING id)
            SELECT array_agg(id ORDER BY id) FROM claimed
            """);
        var statement = new OutcomeStatement(claim.Items, deleteCompleted: false).Text(1 << (int)kind);
        var types = kind == OutcomeKind.Dead ? "text, bigint[], bigint[], text[]" : "text, bigint[], bigint[]";
        var arguments = $"'test', '{{{string.Join(",", running)}}}', '{{{string.Join(",", running.Select(_ => 1))}}}'"
            + (kind == OutcomeKind.Dead ? $", '{{{string.Join(",", running.Select(_ => "x"))}}}'" : "");

        await using var connection = await claim.OpenAsync();
        await using var transaction = await connection.BeginTransactionAsync();
        await using (var prepare = new NpgsqlCommand(
            $"{PostgreSqlWorkQueue<int>.SessionSettings}; PREPARE measured ({types}) AS {statement}", connection, transaction))
        {
            await prepare.ExecuteNonQueryAsync();
        }

        string json;
        await using (var explain = new NpgsqlCommand($"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE measured ({arguments})", connection, transaction))
        {
            json = (string)(await explain.ExecuteScalarAsync())!;
        }

        await transaction.RollbackAsync();

        using var document = JsonDocument.Parse(json);
        var plan = document.RootElement[0].GetProperty("Plan");
        var indexes = new List<string>();
        Indexes(plan, indexes);
        Assert.All(indexes, index => Assert.Equal("items_pkey", index));
        Assert.NotEmpty(indexes);
        var buffers = plan.GetProperty("Shared Hit Blocks").GetInt64() + plan.GetProperty("Shared Read Blocks").GetInt64();
        Assert.True(buffers < 20 * Written, $"{buffers} buffers read for {Written} outcomes.");
    }

    private static void Indexes(JsonElement node, List<string> indexes)
    {
        if (node.TryGetProperty("Index Name", out var name))
        {
            indexes.Add(name.GetString()!);
        }

        if (node.TryGetProperty("Plans", out var children))
        {
            foreach (var child in children.EnumerateArray())
            {
                Indexes(child, indexes);
            }
        }
    }
}
