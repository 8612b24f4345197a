using System.Text.Json;
using BoundedWork.Hosting;
using BoundedWork.Testing;

namespace BoundedWork.Cli.Tests;

/// <summary>
/// <c>bw cluster set</c>'s fair share options as an operator runs them: the real tool in its own process against an
/// app's socket, over an in-memory cluster of queue "payments". The tool refuses what the command line gets wrong; the
/// app refuses bad values, naming the field, and changes nothing.
/// </summary>
public sealed class ClusterFairShareCommandTests
{
    [Fact]
    public async Task ClusterSet_FairShareOptions_SetWeightsAndTheBound_RemoveAWeight_TurnItOff_EachAuditedAndShown()
    {
        await using var app = await ClusterApp.StartAsync();

        var on = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--default-weight", "2", "--tenant-weight", "acme=4", "--tenant-weight", "a=b=3", "--max-running-per-tenant", "5"));

        Assert.True(on.ExitCode == 0, on.ToString());
        Assert.Contains("payments: fairShare off -> on: default weight 2, weights a=b 3, acme 4, max running per tenant 5", Plain(on.Out), StringComparison.Ordinal);
        var fair = app.Cluster.Settings.FairShare!;
        Assert.Equal((2, 4, 3, 5), (fair.DefaultWeight, fair.GetWeight("acme"), fair.GetWeight("a=b"), fair.MaxRunningPerTenant!.Value));

        var shown = Plain((await Bw.RunAsync(app.Bw("cluster", "payments"))).Out);
        Assert.Contains("fair share across tenants: on: default weight 2, weights a=b 3, acme 4, max running per tenant 5", shown, StringComparison.Ordinal);

        var edited = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--remove-tenant-weight", "acme", "--clear-max-running-per-tenant", "--json"));

        Assert.True(edited.ExitCode == 0, edited.ToString());
        var current = JsonDocument.Parse(edited.Out).RootElement.GetProperty("current").GetProperty("fairShare");
        Assert.Equal([("a=b", 3)], current.GetProperty("tenantWeights").EnumerateObject().Select(p => (p.Name, p.Value.GetInt32())));
        Assert.Equal(JsonValueKind.Null, current.GetProperty("maxRunningPerTenant").ValueKind);
        Assert.Equal(2, current.GetProperty("defaultWeight").GetInt32());

        var off = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--fair-share-off"));

        Assert.True(off.ExitCode == 0, off.ToString());
        Assert.Contains("fairShare on: default weight 2, weights a=b 3, max running per tenant none, starts per second per tenant none (burst default) -> off", Plain(off.Out), StringComparison.Ordinal);
        Assert.Null(app.Cluster.Settings.FairShare);
        Assert.Contains("fair share across tenants: off", Plain((await Bw.RunAsync(app.Bw("cluster", "payments"))).Out), StringComparison.Ordinal);
        var entries = app.Logs.WithEvent("ClusterFairShareChanged");
        Assert.Equal(
            [
                "off -> on, defaultWeight 1 -> 2, maxRunningPerTenant none -> 5, tenantWeights['a=b'] none -> 3, tenantWeights['acme'] none -> 4",
                "maxRunningPerTenant 5 -> none, tenantWeights['acme'] 4 -> none",
                "on -> off",
            ],
            entries.Select(e => e.GetStructuredStateValue("FairShareChange")));
        Assert.All(entries, e => Assert.Matches(@"^local socket peer \(uid \d+, pid \d+\)$", e.GetStructuredStateValue("User")));
    }

    [Fact]
    public async Task ClusterSet_StartsPerTenantOptions_SetTheRateAndTheBurst_ClearEach_AuditedAndShown()
    {
        await using var app = await ClusterApp.StartAsync();

        var on = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--starts-per-second-per-tenant", "2.5", "--starts-burst-per-tenant", "10"));

        Assert.True(on.ExitCode == 0, on.ToString());
        Assert.Contains("payments: fairShare off -> on: default weight 1, no tenant weights, max running per tenant none, starts per second per tenant 2.5 (burst 10)", Plain(on.Out), StringComparison.Ordinal);
        var fair = app.Cluster.Settings.FairShare!;
        Assert.Equal((2.5, 10), (fair.StartsPerSecondPerTenant!.Value, fair.StartsBurstPerTenant!.Value));
        Assert.Contains("fair share across tenants: on: default weight 1, no tenant weights, max running per tenant none, starts per second per tenant 2.5 (burst 10)", Plain((await Bw.RunAsync(app.Bw("cluster", "payments"))).Out), StringComparison.Ordinal);

        var clearRate = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--clear-starts-per-second-per-tenant", "--json"));

        Assert.True(clearRate.ExitCode == 0, clearRate.ToString());
        var current = JsonDocument.Parse(clearRate.Out).RootElement.GetProperty("current").GetProperty("fairShare");
        Assert.Equal((JsonValueKind.Null, 10), (current.GetProperty("startsPerSecondPerTenant").ValueKind, current.GetProperty("startsBurstPerTenant").GetInt32()));

        var clearBurst = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--clear-starts-burst-per-tenant"));

        Assert.True(clearBurst.ExitCode == 0, clearBurst.ToString());
        fair = app.Cluster.Settings.FairShare!;
        Assert.Equal(((double?)null, (int?)null), (fair.StartsPerSecondPerTenant, fair.StartsBurstPerTenant));
        Assert.Contains("starts per second per tenant none (burst default)", Plain((await Bw.RunAsync(app.Bw("cluster", "payments"))).Out), StringComparison.Ordinal);
        Assert.Equal(
            [
                "off -> on, startsPerSecondPerTenant none -> 2.5, startsBurstPerTenant none -> 10",
                "startsPerSecondPerTenant 2.5 -> none",
                "startsBurstPerTenant 10 -> none",
            ],
            app.Logs.WithEvent("ClusterFairShareChanged").Select(e => e.GetStructuredStateValue("FairShareChange")));
    }

    [Theory]
    [InlineData(2, "--tenant-weight: 'acme' is not TENANT=WEIGHT", "--tenant-weight", "acme")]
    [InlineData(2, "--tenant-weight: '=4' names no tenant", "--tenant-weight", "=4")]
    [InlineData(2, "--tenant-weight: the weight of 'acme' is not a whole number (was 'four')", "--tenant-weight", "acme=four")]
    [InlineData(2, "--tenant-weight: the weight of 'acme' is not a whole number (was '2.5')", "--tenant-weight", "acme=2.5")]
    [InlineData(2, "--tenant-weight: the weight of 'acme' is not a whole number (was '')", "--tenant-weight", "acme=")]
    [InlineData(2, "--tenant-weight: tenant 'acme' is given more than once", "--tenant-weight", "acme=2", "--tenant-weight", "acme=3")]
    [InlineData(2, "Tenant 'acme' is given to both --tenant-weight and --remove-tenant-weight", "--tenant-weight", "acme=2", "--remove-tenant-weight", "acme")]
    [InlineData(2, "--remove-tenant-weight: name a tenant", "--remove-tenant-weight", "")]
    [InlineData(2, "Give --fair-share-off alone", "--fair-share-off", "--default-weight", "2")]
    [InlineData(2, "Give --max-running-per-tenant or --clear-max-running-per-tenant, not both.", "--max-running-per-tenant", "3", "--clear-max-running-per-tenant")]
    [InlineData(2, "--default-weight: 'heavy' is not a whole number.", "--default-weight", "heavy")]
    [InlineData(2, "--max-running-per-tenant: '99999999999' is too large", "--max-running-per-tenant", "99999999999")]
    [InlineData(1, "fairShare.tenantWeights \"acme\" must be a whole number from 1 to 1000 (was 0)", "--tenant-weight", "acme=0")]
    [InlineData(1, "fairShare.tenantWeights \"acme\" must be a whole number from 1 to 1000 (was -4)", "--tenant-weight", "acme=-4")]
    [InlineData(1, "fairShare.tenantWeights \"acme\" must be a whole number from 1 to 1000 (was 1001)", "--tenant-weight", "acme=1001")]
    [InlineData(1, "fairShare.tenantWeights \"ac\\r\\nme\": A tenant must not contain control characters.", "--tenant-weight", "ac\r\nme=4")]
    [InlineData(1, "[31m\": A tenant must not contain control characters.", "--tenant-weight", "\u001b[31m=4")]
    [InlineData(1, "fairShare.defaultWeight must be a whole number from 1 to 1000 (was 0)", "--default-weight", "0")]
    [InlineData(1, "fairShare.maxRunningPerTenant must be between 1 and 1,000,000 (was 0)", "--max-running-per-tenant", "0")]
    [InlineData(2, "--starts-per-second-per-tenant: 'fast' is not a number of starts per second", "--starts-per-second-per-tenant", "fast")]
    [InlineData(2, "--starts-per-second-per-tenant: a number of starts per second is finite (was NaN)", "--starts-per-second-per-tenant", "NaN")]
    [InlineData(2, "--starts-per-second-per-tenant: a number of starts per second is finite (was Infinity)", "--starts-per-second-per-tenant", "1e400")]
    [InlineData(2, "Give --starts-per-second-per-tenant or --clear-starts-per-second-per-tenant, not both.", "--starts-per-second-per-tenant", "2", "--clear-starts-per-second-per-tenant")]
    [InlineData(1, "fairShare.startsPerSecondPerTenant must be more than 0 and at most 1,000,000 (was 0)", "--starts-per-second-per-tenant", "0")]
    [InlineData(1, "fairShare.startsPerSecondPerTenant must be more than 0 and at most 1,000,000 (was -1)", "--starts-per-second-per-tenant", "-1")]
    [InlineData(2, "--starts-burst-per-tenant: '2.5' is not a whole number.", "--starts-burst-per-tenant", "2.5")]
    [InlineData(2, "Give --starts-burst-per-tenant or --clear-starts-burst-per-tenant, not both.", "--starts-burst-per-tenant", "2", "--clear-starts-burst-per-tenant")]
    [InlineData(1, "fairShare.startsBurstPerTenant must be between 1 and 1,000,000 (was 0)", "--starts-burst-per-tenant", "0")]
    [InlineData(1, "fairShare.startsBurstPerTenant must be between 1 and 1,000,000 (was -3)", "--starts-burst-per-tenant", "-3")]
    public async Task ClusterSet_BadFairShareInput_ExitCodeAndAMessageNamingTheOptionOrField_NothingChanges(int exitCode, string message, params string[] args)
    {
        await using var app = await ClusterApp.StartAsync();

        var run = await Bw.RunAsync(app.Bw(["cluster", "set", "payments", .. args]));

        Assert.True(run.ExitCode == exitCode, run.ToString());
        Assert.Contains(message, Plain(run.Error), StringComparison.Ordinal);
        Assert.Empty(app.Cluster.Changes);
        Assert.Null(app.Cluster.Settings.FairShare);
        Assert.Empty(app.Logs.WithEvent("ClusterFairShareChanged"));
    }

    [Fact]
    public async Task ClusterSet_ManyTenantWeights_AreSentAsOneChange()
    {
        await using var app = await ClusterApp.StartAsync();
        var args = Enumerable.Range(0, 12).SelectMany(i => new[] { "--tenant-weight", $"t{i:00}={i + 1}" }).ToArray();

        var run = await Bw.RunAsync(app.Bw(["cluster", "set", "payments", .. args]));

        Assert.True(run.ExitCode == 0, run.ToString());
        Assert.Equal(12, app.Cluster.Settings.FairShare!.Weights.Count);
        Assert.Single(app.Cluster.Changes);
        Assert.Contains("(+2 more)", Plain(run.Out), StringComparison.Ordinal);
    }

    private static string Plain(string output) => System.Text.RegularExpressions.Regex.Replace(output, @"\x1b\[[0-9;]*m", "");
}
