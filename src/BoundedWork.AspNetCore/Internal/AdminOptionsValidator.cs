using Microsoft.Extensions.Options;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>Validates <see cref="BoundedWorkAdminOptions"/>, naming each bad setting.</summary>
internal sealed class AdminOptionsValidator : IValidateOptions<BoundedWorkAdminOptions>
{
    public ValidateOptionsResult Validate(string? name, BoundedWorkAdminOptions options)
    {
        List<string>? errors = null;
        if (string.IsNullOrWhiteSpace(options.AuthorizationPolicy))
        {
            (errors ??= []).Add($"{nameof(BoundedWorkAdminOptions)}.{nameof(BoundedWorkAdminOptions.AuthorizationPolicy)} must not be empty.");
        }

        if (options.History < TimeSpan.FromMinutes(1) || options.History > TimeSpan.FromHours(1))
        {
            (errors ??= []).Add($"{nameof(BoundedWorkAdminOptions)}.{nameof(BoundedWorkAdminOptions.History)} must be between 1 minute and 1 hour (was {options.History}).");
        }

        return errors is null ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(errors);
    }
}
