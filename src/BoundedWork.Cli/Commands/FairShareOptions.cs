using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using BoundedWork.Cli.Rendering;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// The fair share options of <c>bw cluster set</c> and the <c>fairShare</c> object of the change they make: the
/// default weight, tenants' own weights (set, or removed), the most items of one tenant running at once (or no bound),
/// the most starts of one tenant per second and its burst (or no limit, the default burst), or fair share off. The app checks the values (weights from 1 to 1,000, tenant names); the tool refuses only what the
/// command line gets wrong (<c>--tenant-weight acme</c> without a weight, a weight that is not a whole number, an option
/// and its opposite). A setting added to fair share takes an option here, a line in <see cref="AddChange"/> and one in
/// <see cref="Describe"/>.
/// </summary>
internal sealed class FairShareOptions
{
    private readonly Option<int?> _defaultWeight = new("--default-weight")
    {
        Description = "Fair share: the weight of every tenant without a weight of its own (1 to 1000; turns fair share on).",
        CustomParser = NumberParsers.WholeNumber,
    };

    private readonly Option<string[]> _tenantWeight = new("--tenant-weight")
    {
        Description = "Fair share: a tenant's own weight, TENANT=WEIGHT (repeatable: --tenant-weight acme=4 --tenant-weight globex=2; turns fair share on).",
        Arity = ArgumentArity.OneOrMore,
        AllowMultipleArgumentsPerToken = false,
    };

    private readonly Option<string[]> _removeTenantWeight = new("--remove-tenant-weight")
    {
        Description = "Fair share: give a tenant the default weight again (repeatable).",
        Arity = ArgumentArity.OneOrMore,
        AllowMultipleArgumentsPerToken = false,
    };

    private readonly Option<int?> _maxRunningPerTenant = new("--max-running-per-tenant")
    {
        Description = "Fair share: the most items of one tenant running at once across all nodes (turns fair share on).",
        CustomParser = NumberParsers.WholeNumber,
    };

    private readonly Option<bool> _clearMaxRunningPerTenant = new("--clear-max-running-per-tenant") { Description = "Fair share: remove the bound on one tenant's running items." };

    private readonly Option<double?> _startsPerSecondPerTenant = new("--starts-per-second-per-tenant")
    {
        Description = "Fair share: the most items of one tenant starting per second across all nodes (turns fair share on).",
        CustomParser = static result => NumberParsers.Number(result, "a number of starts per second"),
    };

    private readonly Option<bool> _clearStartsPerSecondPerTenant = new("--clear-starts-per-second-per-tenant") { Description = "Fair share: remove the limit on one tenant's starts per second." };

    private readonly Option<int?> _startsBurstPerTenant = new("--starts-burst-per-tenant")
    {
        Description = "Fair share: how many items of one tenant may start at once after it was idle (the default: one second's worth; turns fair share on).",
        CustomParser = NumberParsers.WholeNumber,
    };

    private readonly Option<bool> _clearStartsBurstPerTenant = new("--clear-starts-burst-per-tenant") { Description = "Fair share: go back to the default burst per tenant, one second's worth of starts." };

    private readonly Option<bool> _off = new("--fair-share-off") { Description = "Turn fair share across tenants off: claims take ready items in one order again (the weights are dropped)." };

    /// <summary>Adds the options to <paramref name="command"/>.</summary>
    public void AddTo(Command command)
    {
        command.Options.Add(_defaultWeight);
        command.Options.Add(_tenantWeight);
        command.Options.Add(_removeTenantWeight);
        command.Options.Add(_maxRunningPerTenant);
        command.Options.Add(_clearMaxRunningPerTenant);
        command.Options.Add(_startsPerSecondPerTenant);
        command.Options.Add(_clearStartsPerSecondPerTenant);
        command.Options.Add(_startsBurstPerTenant);
        command.Options.Add(_clearStartsBurstPerTenant);
        command.Options.Add(_off);
    }

    /// <summary>Gets whether the command line gives any fair share option.</summary>
    public bool IsGiven(CommandResult result) => result.GetValue(_off) || ChangesFairShare(result);

    /// <summary>Refuses what the command line gets wrong, each message naming the option.</summary>
    public void Validate(CommandResult result)
    {
        if (result.GetValue(_off) && ChangesFairShare(result))
        {
            result.AddError("Give --fair-share-off alone: it turns fair share off, and the other fair share options set it.");
        }

        foreach (var (value, clear) in new (Option Value, Option<bool> Clear)[]
        {
            (_maxRunningPerTenant, _clearMaxRunningPerTenant),
            (_startsPerSecondPerTenant, _clearStartsPerSecondPerTenant),
            (_startsBurstPerTenant, _clearStartsBurstPerTenant),
        })
        {
            if (result.GetResult(value) is not null && result.GetValue(clear))
            {
                result.AddError($"Give {value.Name} or {clear.Name}, not both.");
            }
        }

        var set = new HashSet<string>(StringComparer.Ordinal);
        foreach (var text in result.GetValue(_tenantWeight) ?? [])
        {
            if (ParseWeight(text) is { Error: { } error })
            {
                result.AddError(error);
            }
            else if (!set.Add(ParseWeight(text).Tenant))
            {
                result.AddError($"--tenant-weight: tenant '{ClusterCommands.Safe(ParseWeight(text).Tenant)}' is given more than once.");
            }
        }

        foreach (var tenant in result.GetValue(_removeTenantWeight) ?? [])
        {
            if (tenant.Length == 0)
            {
                result.AddError("--remove-tenant-weight: name a tenant (it was empty).");
            }
            else if (set.Contains(tenant))
            {
                result.AddError($"Tenant '{ClusterCommands.Safe(tenant)}' is given to both --tenant-weight and --remove-tenant-weight.");
            }
        }
    }

    /// <summary>Adds <c>fairShare</c> to the change when the command line gives a fair share option.</summary>
    public void AddChange(JsonObject body, ParseResult result)
    {
        if (result.GetValue(_off))
        {
            body["fairShare"] = null;
            return;
        }

        if (!ChangesFairShare(result.CommandResult))
        {
            return;
        }

        var fair = new JsonObject();
        if (result.GetValue(_defaultWeight) is { } weight)
        {
            fair["defaultWeight"] = weight;
        }

        var weights = new JsonObject();
        foreach (var text in result.GetValue(_tenantWeight) ?? [])
        {
            var (tenant, value, _) = ParseWeight(text);
            weights[tenant] = value;
        }

        foreach (var tenant in result.GetValue(_removeTenantWeight) ?? [])
        {
            weights[tenant] = null;
        }

        if (weights.Count > 0)
        {
            fair["tenantWeights"] = weights;
        }

        if (result.GetValue(_clearMaxRunningPerTenant))
        {
            fair["maxRunningPerTenant"] = null;
        }
        else if (result.GetValue(_maxRunningPerTenant) is { } max)
        {
            fair["maxRunningPerTenant"] = max;
        }

        if (result.GetValue(_clearStartsPerSecondPerTenant))
        {
            fair["startsPerSecondPerTenant"] = null;
        }
        else if (result.GetValue(_startsPerSecondPerTenant) is { } rate)
        {
            fair["startsPerSecondPerTenant"] = rate;
        }

        if (result.GetValue(_clearStartsBurstPerTenant))
        {
            fair["startsBurstPerTenant"] = null;
        }
        else if (result.GetValue(_startsBurstPerTenant) is { } burst)
        {
            fair["startsBurstPerTenant"] = burst;
        }

        body["fairShare"] = fair;
    }

    /// <summary>
    /// A durable queue's fair share (the <c>fairShare</c> of its settings) in one line: <c>off</c>, or the default
    /// weight, the tenants' own weights (the first ten; tenant names made safe by <paramref name="safe"/>), the bound, and
/// the starts per second per tenant with its burst.
    /// </summary>
    public static string Describe(JsonElement fair, Func<string, string> safe)
    {
        if (fair.ValueKind == JsonValueKind.Null)
        {
            return "off";
        }

        if (fair.ValueKind != JsonValueKind.Object)
        {
            return "not reported by the app";
        }

        const int Shown = 10;
        var weights = fair.Get("tenantWeights") is { ValueKind: JsonValueKind.Object } w ? w.EnumerateObject().ToList() : [];
        var listed = weights.Count == 0
            ? "no tenant weights"
            : "weights " + string.Join(", ", weights.Take(Shown).Select(p => $"{safe(p.Name)} {p.Value.GetRawText()}"))
                + (weights.Count > Shown ? $" (+{weights.Count - Shown} more)" : "");
        var max = fair.Get("maxRunningPerTenant").ValueKind == JsonValueKind.Number ? fair.Text("maxRunningPerTenant") : "none";
        var rate = fair.Get("startsPerSecondPerTenant").ValueKind == JsonValueKind.Number ? fair.Text("startsPerSecondPerTenant") : "none";
        var burst = fair.Get("startsBurstPerTenant").ValueKind == JsonValueKind.Number ? fair.Text("startsBurstPerTenant") : "default";
        return $"on: default weight {fair.Text("defaultWeight")}, {listed}, max running per tenant {max}, starts per second per tenant {rate} (burst {burst})";
    }

    private bool ChangesFairShare(CommandResult result) =>
        result.GetResult(_defaultWeight) is not null
        || result.GetResult(_tenantWeight) is not null
        || result.GetResult(_removeTenantWeight) is not null
        || result.GetResult(_maxRunningPerTenant) is not null
        || result.GetValue(_clearMaxRunningPerTenant)
        || result.GetResult(_startsPerSecondPerTenant) is not null
        || result.GetValue(_clearStartsPerSecondPerTenant)
        || result.GetResult(_startsBurstPerTenant) is not null
        || result.GetValue(_clearStartsBurstPerTenant);

    /// <summary>
    /// <c>TENANT=WEIGHT</c>: the tenant is everything before the last <c>=</c> (a tenant's name may hold one), the weight a
    /// whole number after it; the error names the option.
    /// </summary>
    private static (string Tenant, int Weight, string? Error) ParseWeight(string text)
    {
        var at = text.LastIndexOf('=');
        if (at < 0)
        {
            return ("", 0, $"--tenant-weight: '{ClusterCommands.Safe(text)}' is not TENANT=WEIGHT (such as acme=4).");
        }

        var (tenant, weight) = (text[..at], text[(at + 1)..]);
        if (tenant.Length == 0)
        {
            return ("", 0, $"--tenant-weight: '{ClusterCommands.Safe(text)}' names no tenant before '=' (such as acme=4).");
        }

        return int.TryParse(weight, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var value)
            ? (tenant, value, null)
            : (tenant, 0, $"--tenant-weight: the weight of '{ClusterCommands.Safe(tenant)}' is not a whole number (was '{ClusterCommands.Safe(weight)}').");
    }
}
