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

    private sealed class Owner : IStoredItemOwner
    {
        public string DeliveryDescriptionPrefix => "test";

        public void Run(StoredItem item) => throw new NotSupportedException();

        public void Release(StoredItem item) => throw new NotSupportedException();
    }
}
