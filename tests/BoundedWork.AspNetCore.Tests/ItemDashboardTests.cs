using System.Collections.Concurrent;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The dashboard's stored-items section in a real browser, over a stand-in durable queue: filter, dry run, confirm, apply.</summary>
public sealed class ItemDashboardTests
{
    [Fact]
    public async Task Dashboard_SearchesStoredItems_AndAppliesAnActionOnlyAfterADryRunAndAConfirmation()
    {
        var store = new StandInItems();
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
            services.AddSingleton<IWorkQueueStorage>(store);
            services.AddSingleton<IDeadLetterStore>(store);
            services.AddSingleton<IStoredItemSearch>(store);
        });
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var dashboard = await DashboardPage.OpenAsync(browser, server);
        var (page, errors, dialogs) = (dashboard.Page, dashboard.Errors, dashboard.Dialogs);
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        var section = page.Locator("#items");

        // The first page of ready items, then a filtered search of dead letters.
        await Assertions.Expect(section.Locator("tr[data-item='11']")).ToContainTextAsync("k1", patience);
        await section.Locator("#it-state").SelectOptionAsync("dead-letter");
        await section.Locator("#it-error").FillAsync("provider");
        await section.Locator("#it-path").FillAsync("customer.id");
        await section.Locator("#it-equals").FillAsync("c7");
        await section.Locator("#it-search").ClickAsync();
        await Assertions.Expect(section.Locator("tr[data-item='7']")).ToContainTextAsync("provider down", patience);

        // The state's change may search first (dead letters, no filters); the button's search carries every filter.
        var filtered = new StoredItemQuery { State = StoredItemState.DeadLetter, ErrorContains = "provider", PayloadPath = "customer.id", PayloadEquals = "c7", Limit = 20 };
        using (var deadline = new CancellationTokenSource(TestKit.Safety))
        {
            while (!store.Searches.Contains(filtered))
            {
                await Task.Delay(20, deadline.Token);
            }
        }


        // Dry run: nothing applied. A dismissed confirmation applies nothing; an accepted one applies with the token.
        await section.Locator("#it-action").SelectOptionAsync("requeue");
        await section.Locator("#it-preview").ClickAsync();
        await Assertions.Expect(page.Locator("#it-msg")).ToContainTextAsync("requeue would touch 3 items", patience);
        Assert.Empty(store.Applied);
        await section.Locator("#it-apply").ClickAsync();
        using (var deadline = new CancellationTokenSource(TestKit.Safety))
        {
            while (dialogs.IsEmpty)
            {
                await Task.Delay(20, deadline.Token);
            }
        }

        Assert.Contains("requeue at most 3 items of payments", Assert.Single(dialogs), StringComparison.Ordinal);
        Assert.Empty(store.Applied);
        dashboard.Accept = true;
        await section.Locator("#it-apply").ClickAsync();
        await Assertions.Expect(page.Locator("#it-msg")).ToContainTextAsync("requeue: 3 changed, 0 skipped", patience);
        var (action, token) = Assert.Single(store.Applied);
        Assert.Equal(StoredItemActionKind.Requeue, action.Kind);
        Assert.Equal("3.token", token);
        Assert.Empty(errors);
        Assert.Single(server.Logs.WithEvent("ItemActionApplied"));
    }

    /// <summary>A durable queue "payments" as the console sees it: its storage statistics, a page of items, and actions it records.</summary>
    private sealed class StandInItems : IWorkQueueStorage, IDeadLetterStore, IStoredItemSearch
    {
        public string QueueName => "payments";

        public string StorageKind => "PostgreSql";

        public WorkQueueStorageStatistics Statistics { get; } = new() { DeadLettered = 3, IsAvailable = true, ReadAt = DateTimeOffset.UtcNow };

        public ConcurrentQueue<StoredItemQuery> Searches { get; } = new();

        public ConcurrentQueue<(StoredItemAction Action, string Token)> Applied { get; } = new();

        public Task<StoredItemPage> SearchItemsAsync(StoredItemQuery query, CancellationToken cancellationToken = default)
        {
            Searches.Enqueue(query);
            var now = DateTimeOffset.UtcNow;
            return Task.FromResult(new StoredItemPage(
                query.State == StoredItemState.DeadLetter
                    ? [new StoredItemInfo { ItemId = 7, State = query.State, Attempts = 4, EnqueuedAt = now, RunAt = now, FinishedAt = now, LastError = "Failed: provider down" }]
                    : [new StoredItemInfo { ItemId = 11, State = query.State, Attempts = 0, OrderingKey = "k1", EnqueuedAt = now, RunAt = now }],
                null,
                1));
        }

        public Task<StoredItemActionPreview> PreviewItemActionAsync(StoredItemAction action, CancellationToken cancellationToken = default) =>
            Task.FromResult(new StoredItemActionPreview(3, "3.token"));

        public Task<StoredItemActionResult> ApplyItemActionAsync(StoredItemAction action, string confirmToken, CancellationToken cancellationToken = default)
        {
            Applied.Enqueue((action, confirmToken));
            return Task.FromResult(new StoredItemActionResult(3, 0, false));
        }

        public Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default) => Task.FromResult(new DeadLetterPage([], null));

        public Task<StoredDeadLetter?> GetDeadLetterAsync(long itemId, int maxPayloadLength, CancellationToken cancellationToken = default) => Task.FromResult<StoredDeadLetter?>(null);

        public Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default) => Task.FromResult(0);

        public Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default) => Task.FromResult(0);
    }
}
