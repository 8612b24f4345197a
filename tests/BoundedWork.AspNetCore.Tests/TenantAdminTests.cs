using System.Net;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>Fair share through the console: the busiest tenants in the executor's JSON, weights changed with PATCH, bad ones refused by field.</summary>
public sealed class TenantAdminTests : IAsyncLifetime
{
    private const string Hostile = "<img src=x onerror=alert(1)>\"'&";

    private AdminServer _server = null!;

    public async Task InitializeAsync() => _server = await AdminServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task GetExecutor_FairShareOff_LeavesTenantsOut()
    {
        var json = await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync();
        Assert.False(json.TryGetProperty("tenants", out _), $"Unexpected tenants in {json}");
    }

    [Fact]
    public async Task GetExecutor_TenantsBusy_ListsTheBusiestFirstWithTheirCounts()
    {
        _server.Payments.Reconfigure(s => s with { FairShare = new FairShareSettings { Weights = new Dictionary<string, int> { ["acme"] = 3 } } });
        var longName = new string('x', FairShareSettings.MaxTenantLength);
        await _server.Payments.ForTenant("acme").RunAsync(() => { });
        await _server.Payments.ForTenant(Hostile).RunAsync(() => { });
        await _server.Payments.ForTenant(longName).RunAsync(() => { });
        using var release = new ManualResetEventSlim();
        using var entered = new ManualResetEventSlim();
        var blocked = _server.Payments.ForTenant("acme").RunAsync(() =>
        {
            entered.Set();
            release.Wait(TimeSpan.FromSeconds(30));
        });
        Assert.True(entered.Wait(TimeSpan.FromSeconds(30)), "The blocking item never started.");

        try
        {
            var tenants = (await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync()).GetProperty("tenants");
            var first = tenants[0];
            Assert.Equal("acme", first.GetProperty("tenant").GetString());
            Assert.Equal((3, 1, 1), (first.GetProperty("weight").GetInt32(), first.GetProperty("running").GetInt32(), first.GetProperty("completed").GetInt32()));
            foreach (var field in new[] { "queued", "failed", "refused", "averageWaitMs" })
            {
                Assert.True(first.TryGetProperty(field, out _), $"Missing field '{field}' in {first}");
            }

            var names = tenants.EnumerateArray().Select(static t => t.GetProperty("tenant").GetString()).ToList();
            Assert.Contains(Hostile, names); // a JSON string, exactly as submitted
            Assert.Contains(longName, names);
        }
        finally
        {
            release.Set();
            await blocked;
        }
    }

    [Fact]
    public async Task PatchSettings_TenantWeights_PutInForceAndAudited()
    {
        _server.Payments.Reconfigure(s => s with { FairShare = new FairShareSettings { Weights = new Dictionary<string, int> { ["acme"] = 3 } } });

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"tenantWeights": {"globex": 5, "acme": 1}}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var fairShare = _server.Payments.Settings.FairShare!;
        Assert.Equal((5, 1, 1), (fairShare.GetWeight("globex"), fairShare.GetWeight("acme"), fairShare.GetWeight("other")));
    }

    [Theory]
    [InlineData("""{"tenantWeights": {"acme": 0}}""")]
    [InlineData("""{"tenantWeights": {"acme": 1001}}""")]
    [InlineData("""{"tenantWeights": {"acme": "4"}}""")]
    [InlineData("""{"tenantWeights": {"acme": 2.5}}""")]
    [InlineData("""{"tenantWeights": {"": 2}}""")]
    [InlineData("""{"tenantWeights": {"a\r\nb": 2}}""")]
    [InlineData("""{"tenantWeights": {}}""")]
    [InlineData("""{"tenantWeights": [1]}""")]
    public async Task PatchSettings_BadTenantWeights_IsAProblemNamingTheFieldAndChangesNothing(string body)
    {
        _server.Payments.Reconfigure(s => s with { FairShare = new FairShareSettings() });
        var before = _server.Payments.Settings;

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "tenantWeights");
        Assert.True(problem.GetProperty("errors").TryGetProperty("tenantWeights", out _));
        Assert.DoesNotContain("\r", problem.ToString(), StringComparison.Ordinal);
        Assert.Equal(before, _server.Payments.Settings);
    }

    [Theory]
    [InlineData(new byte[] { 0xFF, 0xFE })]
    [InlineData(new byte[] { 0xC3 })]
    public async Task PatchSettings_TenantNameInMalformedUtf8_IsAProblemNamingTheFieldAndChangesNothing(byte[] name)
    {
        _server.Payments.Reconfigure(s => s with { FairShare = new FairShareSettings() });
        var before = _server.Payments.Settings;
        byte[] body = [.. """{"tenantWeights": {" """u8.ToArray()[..^1], .. name, .. "\": 4}}"u8.ToArray()];

        using var response = await _server.Client.SendRawChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "tenantWeights");
        Assert.True(problem.GetProperty("errors").TryGetProperty("tenantWeights", out _));
        Assert.Equal(before, _server.Payments.Settings);
    }

    [Fact]
    public async Task PatchSettings_TenantWeightsWithFairShareOff_IsRefusedNamingTheField()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"tenantWeights": {"acme": 2}}""");

        await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "fair share");
        Assert.Null(_server.Payments.Settings.FairShare);
    }
}
