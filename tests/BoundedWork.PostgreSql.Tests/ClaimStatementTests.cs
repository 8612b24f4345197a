using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The claim statements as the queue runs them (<see cref="ClaimStatements"/>): parameters bound from their records, the
/// claimed rows and the summary row read by <see cref="ClaimReader"/> into items and a <see cref="ClaimSummary"/>.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClaimStatementTests(PostgresFixture postgres)
{
    [Fact]
    public async Task PlainClaim_ReadsTheClaimedItemsWithTheirPlaceInTheClaimOrder_AndTheLastRowsVersionAndWaiting()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var ids = await claim.InsertAsync((null, 0, 0), (null, 3, 0), (null, 0, 0), (null, 0, 5));
        var statements = new ClaimStatements(claim.Sql);
        await using var connection = await claim.OpenAsync();

        var claimed = new List<StoredItem>();
        ClaimSummary summary;
        await using (var command = statements.Plain.Command(connection, new PlainClaimParameters(KeyedClaim.Queue, 2, "test", TimeSpan.FromHours(1), Version: 0, CountWaiting: 3)))
        await using (var reader = await command.ExecuteReaderAsync())
        {
            summary = ClaimReader.Read<PlainClaimRow>(reader, new Owner(), claimed);
        }

        claimed.Sort(StoredItem.CompareClaimOrder); // the rows come back in any order; each carries its place in the claim order
        Assert.Equal([ids[1], ids[0]], claimed.Select(item => item.Id)); // priority 3 first
        Assert.Equal([(short)3, (short)0], claimed.Select(item => item.Priority));
        Assert.All(claimed, item => Assert.Equal(1, item.Delivery));
        Assert.Equal(0, summary.Promoted);
        Assert.Equal(0L, summary.Version); // no settings row: version 0
        Assert.Equal(1, summary.Waiting); // of the first 3 ready items, 1 was not taken
        Assert.True(summary.NextDue > TimeSpan.FromMinutes(30)); // the scheduled item, an hour ahead
        Assert.Equal(0, summary.HeldByKey);
    }

    [Fact]
    public async Task KeyedClaim_ReadsTheClaimedItems_AndTheLastRowsHeldBackCount()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var ids = await claim.InsertAsync([.. Enumerable.Repeat(((string?)"a", 0, 0), 10)]);
        var statements = new ClaimStatements(claim.Sql);
        await using var connection = await claim.OpenAsync();

        var claimed = new List<StoredItem>();
        ClaimSummary summary;
        await using (var command = statements.Keyed.Command(connection, new KeyedClaimParameters(KeyedClaim.Queue, 5, "test", TimeSpan.FromHours(1), PerKey: 2, Version: 0)))
        await using (var reader = await command.ExecuteReaderAsync())
        {
            summary = ClaimReader.Read<KeyedClaimRow>(reader, new Owner(), claimed);
        }

        Assert.Equal([ids[0], ids[1]], claimed.Select(item => item.Id).Order());
        Assert.All(claimed, item => Assert.Equal("a", item.OrderingKey));
        Assert.Equal(3, summary.HeldByKey); // wanted 5, took 2
        Assert.True(summary.OldestHeldByKeySeconds >= 0);
        Assert.Equal(0L, summary.Version); // the settings version it saw (no settings row: 0), checked as the plain claim does
        Assert.Null(summary.NextDue);
    }

    [Fact]
    public async Task KeyedClaim_UnderAnotherSettingsVersion_ClaimsNothing_AndReportsTheVersionItSaw()
    {
        // M = 2 read under version 2; the settings moved on to version 3 (M lowered) before the statement ran.
        var claim = await KeyedClaim.CreateAsync(postgres);
        var ids = await claim.InsertAsync([.. Enumerable.Repeat(((string?)"a", 0, 0), 3)]);
        await postgres.ExecuteAsync($"INSERT INTO {claim.Sql.QueueSettings} (queue, max_running_per_key, version) VALUES ('{KeyedClaim.Queue}', 1, 3)");
        var statements = new ClaimStatements(claim.Sql);
        await using var connection = await claim.OpenAsync();

        var claimed = new List<StoredItem>();
        ClaimSummary summary;
        await using (var command = statements.Keyed.Command(connection, new KeyedClaimParameters(KeyedClaim.Queue, 5, "test", TimeSpan.FromHours(1), PerKey: 2, Version: 2)))
        await using (var reader = await command.ExecuteReaderAsync())
        {
            summary = ClaimReader.Read<KeyedClaimRow>(reader, new Owner(), claimed);
        }

        Assert.Empty(claimed);
        Assert.Equal(3L, summary.Version);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {claim.Items} WHERE state <> 0"));
        Assert.Equal(3, ids.Length);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Claims_ReturnTheClaimedRowsAndOneSummaryRow_EachWithColumnsOfItsOwn(bool keyed)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        await claim.InsertAsync((keyed ? "a" : null, 0, 0), (keyed ? "b" : null, 0, 0));
        var statements = new ClaimStatements(claim.Sql);
        await using var connection = await claim.OpenAsync();
        await using var command = keyed
            ? statements.Keyed.Command(connection, new KeyedClaimParameters(KeyedClaim.Queue, 5, "test", TimeSpan.FromHours(1), PerKey: 2, Version: 0))
            : statements.Plain.Command(connection, new PlainClaimParameters(KeyedClaim.Queue, 5, "test", TimeSpan.FromHours(1), Version: 0, CountWaiting: 5));
        await using var reader = await command.ExecuteReaderAsync();

        // The item's columns come before the summary flag, the summary's after it: each row type leaves the other's null.
        var flag = reader.GetOrdinal("summary");
        var (items, summaries) = (0, 0);
        while (await reader.ReadAsync())
        {
            var isSummary = reader.GetBoolean(flag);
            for (var column = 0; column < reader.FieldCount; column++)
            {
                if (column != flag && column > flag != isSummary)
                {
                    Assert.True(reader.IsDBNull(column), $"{(isSummary ? "the summary" : "a claimed row")} has a value in {reader.GetName(column)}, a column of the other row type");
                }
            }

            (items, summaries) = isSummary ? (items, summaries + 1) : (items + 1, summaries);
        }

        Assert.Equal(2, items);
        Assert.Equal(1, summaries);
    }

    [Fact]
    public async Task CarryingClaim_WritesTheOutcomesAndClaims_InOneStatement_AndCountsWhatLanded()
    {
        var (claim, ids, carrying, connection) = await ThreeItemsTheFirstClaimedAsync();
        await using var _ = connection;

        // Item 1's completion rides with the claim of the other two; a second outcome, for a delivery the row no longer
        // holds (token 2), does not land.
        var completed = new OutcomeRows([ids[0], ids[1]], [1, 2], null, null);
        var claimed = new List<StoredItem>();
        ClaimSummary summary;
        await using (var command = carrying.Command(connection, Plain(count: 5), new OutcomeParameters("test", completed, null, null, null, null)))
        await using (var reader = await command.ExecuteReaderAsync())
        {
            summary = ClaimReader.Read<CarryingClaimRow>(reader, new Owner(), claimed);
        }

        Assert.Equal(1L, summary.Recorded);
        Assert.Equal([ids[1], ids[2]], claimed.Select(item => item.Id).Order());
        Assert.Equal(StorageSql.Completed, await StateAsync(claim, ids[0]));
        Assert.Equal(await XminAsync(claim, ids[0]), await XminAsync(claim, ids[1])); // one transaction
    }

    [Fact]
    public async Task CarryingClaim_ARowBothAnOutcomeAndTheClaimTarget_IsChangedByOneOfThemOnly()
    {
        // A reaped row (ready again, no lease) whose late completion rides with a claim that picks it.
        var claim = await KeyedClaim.CreateAsync(postgres);
        var ids = await claim.InsertAsync((null, 0, 0));
        var carrying = new CarryingClaimStatement(claim.Sql, new OutcomeStatement(claim.Items, deleteCompleted: false));
        await postgres.ScalarAsync<int>($"UPDATE {claim.Items} SET attempts = 1, delivery = 1 WHERE id = {ids[0]} RETURNING 1");
        await using var connection = await claim.OpenAsync();

        var claimed = new List<StoredItem>();
        ClaimSummary summary;
        await using (var command = carrying.Command(connection, Plain(count: 5), new OutcomeParameters("test", new OutcomeRows([ids[0]], [1], null, null), null, null, null, null)))
        await using (var reader = await command.ExecuteReaderAsync())
        {
            summary = ClaimReader.Read<CarryingClaimRow>(reader, new Owner(), claimed);
        }

        // Either the outcome landed (completed, not claimed) or the claim took it (running, the outcome not recorded).
        var state = await StateAsync(claim, ids[0]);
        if (claimed.Count == 0)
        {
            Assert.Equal((1L, StorageSql.Completed), (summary.Recorded, state));
        }
        else
        {
            Assert.Equal((0L, StorageSql.Running, 2L), (summary.Recorded, state, claimed[0].Delivery));
        }
    }

    [Fact]
    public async Task CarryingClaim_WhoseOutcomeWriteWaitsForARowLock_HoldsNoReadyRowMeanwhile()
    {
        // A carried outcome that waits (here for a row lock another transaction holds; in production a write that lags)
        // must not keep the rows its claim picks locked while it waits: other nodes' claims skip locked rows, so those
        // items would wait for this node's write, held by no node.
        var (claim, ids, carrying, connection) = await ThreeItemsTheFirstClaimedAsync();
        await using var _ = connection;

        await using var holder = await claim.OpenAsync();
        await using var held = await holder.BeginTransactionAsync();
        await using (var lockRow = new Npgsql.NpgsqlCommand($"SELECT 1 FROM {claim.Items} WHERE id = {ids[0]} FOR UPDATE", holder, held))
        {
            await lockRow.ExecuteScalarAsync();
        }

        var claimed = new List<StoredItem>();
        var carried = Task.Run(async () =>
        {
            await using var command = carrying.Command(connection, Plain(count: 5), new OutcomeParameters("test", new OutcomeRows([ids[0]], [1], null, null), null, null, null, null));
            await using var reader = await command.ExecuteReaderAsync();
            return ClaimReader.Read<CarryingClaimRow>(reader, new Owner(), claimed);
        });
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%BoundedWork outcomes, with a claim%{claim.Items}%'").Result > 0,
            "the carrying claim waits for the row lock");

        // While it waits, both ready items are free for any other claim.
        var free = await postgres.ScalarAsync<long>($"SELECT count(*) FROM (SELECT id FROM {claim.Items} WHERE state = 0 FOR UPDATE SKIP LOCKED) f");
        await held.RollbackAsync();
        var summary = await carried;

        Assert.Equal(2L, free);
        Assert.Equal(1L, summary.Recorded);
        Assert.Equal([ids[1], ids[2]], claimed.Select(item => item.Id).Order());
    }

    /// <summary>Three ready items, the first claimed by a plain claim on the connection returned; and the carrying claim's statement.</summary>
    private async Task<(KeyedClaim Claim, long[] Ids, CarryingClaimStatement Carrying, Npgsql.NpgsqlConnection Connection)> ThreeItemsTheFirstClaimedAsync()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var ids = await claim.InsertAsync((null, 0, 0), (null, 0, 0), (null, 0, 0));
        var connection = await claim.OpenAsync();
        Assert.Equal([ids[0]], (await ClaimPlainAsync(new ClaimStatements(claim.Sql), connection, count: 1)).Select(item => item.Id));
        return (claim, ids, new CarryingClaimStatement(claim.Sql, new OutcomeStatement(claim.Items, deleteCompleted: false)), connection);
    }

    private static PlainClaimParameters Plain(int count) => new(KeyedClaim.Queue, count, "test", TimeSpan.FromHours(1), Version: 0, CountWaiting: 0);

    private Task<short> StateAsync(KeyedClaim claim, long id) => postgres.ScalarAsync<short>($"SELECT state FROM {claim.Items} WHERE id = {id}");

    private Task<long> XminAsync(KeyedClaim claim, long id) => postgres.ScalarAsync<long>($"SELECT xmin::text::bigint FROM {claim.Items} WHERE id = {id}");

    private static async Task<List<StoredItem>> ClaimPlainAsync(ClaimStatements statements, Npgsql.NpgsqlConnection connection, int count)
    {
        var claimed = new List<StoredItem>();
        await using var command = statements.Plain.Command(connection, Plain(count));
        await using var reader = await command.ExecuteReaderAsync();
        ClaimReader.Read<PlainClaimRow>(reader, new Owner(), claimed);
        return claimed;
    }

    private sealed class Owner : IStoredItemOwner
    {
        public string DeliveryDescriptionPrefix => "test";

        public void Run(StoredItem item) => throw new NotSupportedException();

        public void Release(StoredItem item) => throw new NotSupportedException();
    }
}
