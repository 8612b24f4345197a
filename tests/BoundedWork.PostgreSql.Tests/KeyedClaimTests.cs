namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The per-key claim statement (<see cref="Internal.KeyedClaimSql.ClaimPerKey"/>) against the real database: M items per
/// key at most, a key's items oldest first, unkeyed items in the claim order, priorities, scheduled items, and a
/// requeued dead letter's turn.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyedClaimTests(PostgresFixture postgres)
{
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public async Task ClaimPerKey_SeveralKeys_TakesEachKeysOldestM_AndEveryUnkeyedItem(int perKey)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        // Keys interleaved: a b c a b c ... (5 each), and two unkeyed items at the end.
        var rows = Enumerable.Range(0, 15).Select(n => ((string?)"abc"[n % 3].ToString(), 0, 0)).Append((null, 0, 0)).Append((null, 0, 0)).ToArray();
        var ids = await claim.InsertAsync(rows);
        string? KeyOf(long id) => rows[Array.IndexOf(ids, id)].Item1;

        var first = await claim.ClaimAsync(100, perKey);

        var expected = ids.Where((id, n) => rows[n].Item1 is null || n / 3 < perKey).ToArray();
        Assert.Equal(expected, first.Ids.Order());
        Assert.Equal(perKey, await claim.MaxRunningPerKeyAsync());
        Assert.Equal(17 - first.Ids.Count, first.HeldBack); // it wanted 100: every ready item it left is held back
        Assert.Empty((await claim.ClaimAsync(100, perKey)).Ids);

        // The oldest item of key a ends: exactly key a's next item is taken.
        var oldestA = ids[0];
        await claim.CompleteAsync(oldestA);
        var next = await claim.ClaimAsync(100, perKey);
        Assert.Equal([ids[3 * perKey]], next.Ids);
        Assert.Equal("a", KeyOf(next.Ids[0]));
    }

    [Fact]
    public async Task ClaimPerKey_HeldBack_CountsTheWantedItemsTheRuleLeft_UpToTheRequest()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        await claim.InsertAsync([.. Enumerable.Repeat(((string?)"a", 0, 0), 10)]);

        var result = await claim.ClaimAsync(5, perKey: 2);

        Assert.Equal(2, result.Ids.Count);
        Assert.Equal(3, result.HeldBack); // wanted 5, took 2: 3 of the 8 left behind
        Assert.True(result.OldestWait >= 0);
        Assert.Null(result.NextDue);
    }

    [Fact]
    public async Task ClaimPerKey_AnUrgentNewerItemOfAKey_BringsItsOlderItemAlong_NeverOvertakesIt()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        // a1 (priority 0), u (unkeyed, priority 1), a2 (priority 5), b1 (priority 3).
        var ids = await claim.InsertAsync(("a", 0, 0), (null, 1, 0), ("a", 5, 0), ("b", 3, 0));
        var (a1, u, a2, b1) = (ids[0], ids[1], ids[2], ids[3]);

        // One at a time: a2's turn (first in the claim order) goes to a1, a2 follows, then b1, then u.
        var order = new List<long>();
        for (var i = 0; i < 4; i++)
        {
            var one = await claim.ClaimAsync(1, perKey: 2);
            Assert.Single(one.Ids);
            order.Add(one.Ids[0]);
        }

        Assert.Equal([a1, a2, b1, u], order);
    }

    [Fact]
    public async Task ClaimPerKey_UnkeyedItems_InClaimOrder_BehindADeepKeyedBacklog()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var keyed = await claim.InsertAsync([.. Enumerable.Repeat(((string?)"a", 2, 0), 200)]);
        var unkeyed = await claim.InsertAsync((null, 0, 0), (null, 1, 0), (null, 0, 0));

        var result = await claim.ClaimAsync(4, perKey: 2);

        // The two of key a (priority 2) first, then the unkeyed items by priority, then id: not the third unkeyed one.
        Assert.Equal(new[] { keyed[0], keyed[1], unkeyed[0], unkeyed[1] }, result.Ids.Order());
        Assert.Equal(0, result.HeldBack); // it took the 4 it wanted
        var rest = await claim.ClaimAsync(4, perKey: 2);
        Assert.Equal([unkeyed[2]], rest.Ids);
    }

    [Fact]
    public async Task ClaimPerKey_AScheduledOlderItem_CountsAgainstM_AndIsPromotedNotTaken()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        // a1 scheduled an hour ahead, a2 and a3 ready; b1 scheduled but already due.
        var ids = await claim.InsertAsync(("a", 0, 5), ("a", 0, 0), ("a", 0, 0), ("b", 0, 5));
        await postgres.ExecuteAsync($"UPDATE {claim.Items} SET run_at = now() - interval '1 second' WHERE id = {ids[3]}");

        var first = await claim.ClaimAsync(10, perKey: 2);

        Assert.Equal([ids[1]], first.Ids); // a3 has two older unfinished items
        Assert.Equal(1, first.Promoted);
        Assert.NotNull(first.NextDue);
        Assert.InRange(first.NextDue!.Value, 3000, 3600);
        var second = await claim.ClaimAsync(10, perKey: 2);
        Assert.Equal([ids[3]], second.Ids); // b1, promoted by the first claim
    }

    [Fact]
    public async Task ClaimPerKey_ARequeuedDeadLetter_KeepsItsTurn_AndWaitsForTheNewerRunningOnes()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        // Key a: d1 dead, then a2, a3, a4 ready; M = 2.
        var ids = await claim.InsertAsync(("a", 0, 3), ("a", 0, 0), ("a", 0, 0), ("a", 0, 0));
        await postgres.ExecuteAsync($"INSERT INTO {claim.Sql.QueueSettings} (queue, max_running_per_key) VALUES ('{KeyedClaim.Queue}', 2)");
        Assert.Equal(1, await claim.RequeueAsync());

        // The requeued item goes first; the key then runs two at once, in id order.
        var taken = new List<long>();
        for (var round = 0; round < 6 && taken.Count < 4; round++)
        {
            var result = await claim.ClaimAsync(10, perKey: 2);
            taken.AddRange(result.Ids.Order());
            Assert.True(await claim.MaxRunningPerKeyAsync() <= 2);
            if (result.Ids.Count > 0 && result.Promoted == 0)
            {
                await claim.CompleteAsync(result.Ids.Min());
            }
        }

        Assert.Equal(ids, taken);
    }

    [Fact]
    public async Task ClaimPerKey_ADeadLetterRequeuedWhileNewerItemsRun_WaitsUntilFewerThanMRun()
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var ids = await claim.InsertAsync(("a", 0, 3), ("a", 0, 0), ("a", 0, 0), ("a", 0, 0));
        Assert.Equal([ids[1], ids[2]], (await claim.ClaimAsync(10, perKey: 2)).Ids.Order());
        Assert.Equal(1, await claim.RequeueAsync());

        Assert.Empty((await claim.ClaimAsync(10, perKey: 2)).Ids); // two newer items of a run
        await claim.CompleteAsync(ids[1]);
        Assert.Equal([ids[0]], (await claim.ClaimAsync(10, perKey: 2)).Ids); // the requeued one, before a4
        Assert.Equal(2, await claim.MaxRunningPerKeyAsync());
    }
}
